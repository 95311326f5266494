"""`check` beside the server's traffic: the probes' accept length against the server's over all
requests while they ran, and one probe per category with `--probe-prompts`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from specmon.analysis.validity import LifetimeCheck, LifetimeState
from specmon.check import run_check
from specmon.cli import main
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, Snapshot
from specmon.probe_prompts import BUILTIN_SET, ProbePrompt
from specmon.reports.check_report import CheckReport, report_to_dict
from specmon.sim import SimConfig, SimServer, SimThread
from specmon.sources.backends import Connection
from specmon.sources.probe import run_probe
from specmon.target import Target

# The check's own prompt matches no category: it accepts 3.5; chat traffic accepts 1.95.
CONFIG = SimConfig(
    speculative_num_draft_tokens=4,
    plain_step_ms=1.0,
    cycle_ms=1.0,
    ttft_ms=2.0,
    prefill_ms_per_token=0.0,
    concurrency_slowdown=0.0,
    accept_length=3.5,
)
CHAT = next(p.prompt for p in BUILTIN_SET if p.category == "chat")
LIKE_THE_PROBE = "Describe, stage by stage, how a bill becomes a law, with an example for each."


@asynccontextmanager
async def _traffic(url: str, prompt: str) -> AsyncIterator[None]:
    """Four clients streaming `prompt` back to back, each past its second request."""
    stop = asyncio.Event()
    warm = [asyncio.Event() for _ in range(4)]

    async def client(ready: asyncio.Event) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=10) as c:
            done = 0
            while not stop.is_set():
                await run_probe(c, prompt=prompt, max_tokens=300)
                done += 1
                if done == 2:
                    ready.set()

    tasks = [asyncio.create_task(client(w)) for w in warm]
    try:
        await asyncio.wait_for(asyncio.gather(*(w.wait() for w in warm)), timeout=30)
        yield
    finally:
        stop.set()
        await asyncio.gather(*tasks)


async def _check(url: str, prompts: tuple[ProbePrompt, ...] = ()) -> CheckReport:
    async def probe(protocol: Protocol) -> Snapshot:
        return await take_snapshot(Target(url), protocol, kind=SnapshotKind.RUN)

    async def same(_baseline: Snapshot) -> LifetimeCheck:
        return LifetimeCheck(LifetimeState.SAME, "the same server process")

    async with httpx.AsyncClient(base_url=url, timeout=10.0) as client:
        return await run_check(
            Connection(client),
            url,
            run_probe=probe,
            check_lifetime=same,
            probe_tokens=300,
            prompts=prompts,
        )


@pytest.mark.slow
@pytest.mark.parametrize(("traffic", "named"), [(CHAT, True), (LIKE_THE_PROBE, False)])
async def test_check_names_the_gap_only_when_the_traffic_accepts_otherwise(
    traffic: str, named: bool
) -> None:
    assert LIKE_THE_PROBE.endswith(".")  # no category: the same 3.5 as the probe's
    server = SimServer(CONFIG)
    await server.start()
    try:
        async with _traffic(server.url, traffic):
            report = await _check(server.url)
    finally:
        await server.stop()
    gap = report.traffic
    assert gap is not None and gap.named is named
    assert gap.probe == pytest.approx(3.5, rel=0.06)
    # One probe 10% off the traffic is not judged alone: more, until their spread is known.
    assert len(report.probes) in ((2, 3) if named else (1,))
    line = next(f for f in report.findings if f.text.startswith("traffic: "))
    assert line.level == ("warn" if named else "ok")
    assert ("the probe is not representative" in line.text) is named
    assert report.exit_code == 0  # information: the server is healthy either way
    document = report_to_dict(report)["traffic"]
    assert isinstance(document, dict) and document["named"] is named
    if named:
        assert document["accept_length"] < 2.5  # four chat clients and the probe


@pytest.mark.slow
async def test_check_on_an_idle_server_says_there_is_no_traffic_to_compare() -> None:
    # The server's figure over the window is the probe's own: "the probe is representative"
    # of itself said nothing.
    server = SimServer(CONFIG)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as c:
            await run_probe(c, prompt=CHAT, max_tokens=50)  # counters exist, as on a used server
        report = await _check(server.url)
    finally:
        await server.stop()
    assert report.traffic is not None and report.traffic.only_probes
    line = next(f for f in report.findings if f.text.startswith("traffic: "))
    assert line.level == "info", line
    assert "no traffic to compare the probe with" in line.text
    assert "representative" not in line.text


@pytest.mark.slow
def test_probe_prompts_add_one_probe_per_category(
    capsys: pytest.CaptureFixture[str], empty_db: str
) -> None:
    with SimThread(CONFIG) as sim:
        code = main(["check", sim.url, "--probe-prompts", "builtin", "--json", "--db", empty_db])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document["findings"]
    assert list(document["categories"]) == [p.category for p in BUILTIN_SET]
    repetitive = document["categories"]["repetitive"]
    assert repetitive["runs"] == 1 and repetitive["accept_length"] > 3.2
    assert document["categories"]["chat"]["accept_length"] < 2.3
    line = next(f["text"] for f in document["findings"] if f["text"].startswith("by category"))
    assert "code accept" in line and "repetitive accept" in line


def test_a_bad_prompt_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"category": "sql", "prompt": ""}\n')
    code = main(["check", "http://127.0.0.1:9", "--probe-prompts", str(bad)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert (
        err == f"specmon: error: --probe-prompts: {bad}:1: prompt: a non-empty string is required"
    )
