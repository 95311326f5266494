"""`specmon check`: exit 0/1/2 with a one-line reason, against the simulator."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from runs import run

from specmon.analysis.comparison import Verdict
from specmon.analysis.validity import LifetimeCheck, LifetimeState
from specmon.check import run_check
from specmon.cli import main
from specmon.measure.bench import BenchInvalid
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, Snapshot
from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.reports.check_report import EXIT_DEGRADED, CheckReport
from specmon.session.baselines import BaselineLookup
from specmon.sim import SimConfig, SimServer, SimThread
from specmon.sources.backends import Connection
from specmon.target import Target

FAST = SimConfig(plain_step_ms=4.0, cycle_ms=8.0, accept_length=2.1, ttft_ms=10.0, seed=3)
PLAIN = replace(FAST, speculative_algorithm=None)  # the simulator drops the other spec args


@pytest.fixture
def sim(request: pytest.FixtureRequest) -> Iterator[SimThread]:
    with SimThread(getattr(request, "param", FAST)) as thread:
        yield thread


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["check", *args])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


@pytest.mark.slow
def test_healthy_speculative_server(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db, "--probe-tokens", "60")
    assert code == 0, lines
    assert lines[0].startswith("✓ reachable: SGLang 0.5.23")
    assert "✓ speculation: EAGLE3 steps=2 topk=1 draft=3" in lines
    assert any(line.startswith("✓ probe: 60 tokens") and "accept" in line for line in lines)


@pytest.mark.parametrize("sim", [replace(FAST, enable_metrics=False)], indirect=True)
def test_metrics_off_is_degraded(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db, "--probe-tokens", "20")
    assert code == 1
    assert [line for line in lines if line.startswith("!")] == [
        f"! {sim.url}/metrics: 404 — metrics are off; start the server with --enable-metrics"
    ]


@pytest.mark.slow
@pytest.mark.parametrize("sim", [replace(FAST, api_key="sk-right")], indirect=True)
def test_missing_and_wrong_api_key(
    sim: SimThread,
    empty_db: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SPECMON_API_KEY", raising=False)
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db)
    assert code == 2
    assert lines == [
        f"✗ {sim.url}/server_info: HTTP 401 — the API key is missing "
        "(set SPECMON_API_KEY, --api-key-env or --api-key-file)"
    ]
    monkeypatch.setenv("WRONG", "sk-wrong")
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db, "--api-key-env", "WRONG")
    assert code == 2
    assert "the API key is wrong" in lines[0]
    assert "sk-wrong" not in "\n".join(lines)
    monkeypatch.setenv("RIGHT", "sk-right")
    code, lines, _ = _check(
        capsys, sim.url, "--db", empty_db, "--api-key-env", "RIGHT", "--probe-tokens", "20"
    )
    assert code == 0
    assert "✓ auth: the API key was accepted" in lines


def test_nothing_listening(empty_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        code, lines, _ = _check(capsys, f"127.0.0.1:{port}", "--db", empty_db)
    assert code == 2
    assert lines == [
        f"✗ http://127.0.0.1:{port}/server_info: connection refused (nothing listening?)"
    ]


@pytest.mark.slow
def test_server_that_never_answers(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sim.server.faults.hang.add("*")
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db, "--read-timeout", "0.3")
    assert code == 2
    assert lines == [f"✗ {sim.url}/server_info: connected, but no answer within the read timeout"]


@pytest.mark.slow
def test_json_and_baseline_verdict(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    with SimThread(PLAIN) as plain:
        assert main(["bench", plain.url, "--runs", "3", "--max-tokens", "80", "--db", db]) == 0
        capsys.readouterr()
        argv = ["check", sim.url, "--db", db, "--json", "--probe-tokens", "40", "--no-interleave"]
        code = main(argv)
        body = json.loads(capsys.readouterr().out)
    assert code == 0, body["findings"]
    assert body["design"]["kind"] == "stored" and body["baseline_probes"] == []
    assert body["design"]["why_not_interleaved"] == "--no-interleave"
    assert body["status"] == "healthy"
    assert body["baseline"]["confirmed"] is True
    assert body["probe"]["completion_tokens"] == 80  # the baseline's protocol was reused
    assert any("--probe-tokens 40 set aside" in f["text"] for f in body["findings"])
    # plain 4 ms/token vs a 8 ms cycle: break-even 2.0, accept ~2.1, speedup ~+5%
    assert body["break_even_accept_length"] == pytest.approx(2.0, rel=0.03)
    # One figure, one definition: speedup = now / base − 1 = accept / break-even − 1.
    now, base = body["decode_tok_s"], body["baseline"]["decode_tok_s"]
    assert body["speedup"] == pytest.approx(now / base - 1, rel=1e-9)
    # Probed until the interval excluded 0 (or the budget or cap ended it), judged at looks.
    assert body["schema"] == 10
    assert body["probes"][0] == body["probe"] and 3 <= len(body["probes"]) <= 10
    assert 1 <= body["looks"] <= 3 and body["verdict_after_s"] > 0
    assert body["speedup_level"] == pytest.approx(1 - 0.05 / 3)
    accept = body["break_even_accept_length"] + body["margin"]
    assert body["speedup"] == pytest.approx(accept / body["break_even_accept_length"] - 1)


@pytest.mark.slow
def test_check_and_once_choose_the_same_baseline_and_judge_it_alike(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One rule: over a store of several baselines (two plain servers, two probe sizes),
    `check --json` and `--once --json` of the same server choose the same one, from their
    sessions' lookups, and judge it alike (its server read by each)."""
    db = str(tmp_path / "db")
    with SimThread(PLAIN) as a, SimThread(PLAIN) as b:
        for url, tokens in ((a.url, "60"), (b.url, "60"), (a.url, "40")):
            assert main(["bench", url, "--runs", "2", "--max-tokens", tokens, "--db", db]) == 0
        capsys.readouterr()
        check = ["check", sim.url, "--db", db, "--json", "--probe-tokens", "60"]
        assert main([*check, "--no-interleave"]) in (0, 1)
        checked = json.loads(capsys.readouterr().out)
        assert main(["--once", "--json", "--url", sim.url, "--db", db, "--probe-tokens", "60"]) == 0
        frame = json.loads(capsys.readouterr().out)
    [server] = frame["servers"]
    shown, base = server["view"]["baseline"], checked["baseline"]
    assert base["snapshot_id"] == shown["snapshot_id"] == 2  # b's: the newest of the size
    assert base["url"] == shown["url"] == b.url
    validity = shown["validity"]
    assert (base["reasons"], base["unverified"]) == (validity["reasons"], validity["unverified"])
    assert base["valid"] is True and shown["applies"] is True
    # The next in line: a's of the same size, older to check (which read a), unverified to the
    # dashboard (which samples b only), each as it knows it.
    choice = checked["baseline_choice"]
    assert choice["considered"] == 3
    assert (choice["rejected"]["snapshot_id"], choice["rejected"]["reasons"]) == (
        1,
        ["is older than #2"],
    )
    assert f"next: #1 ({a.url}) is unverified: its server is not the one" in shown["chosen_by"]
    # Which part of the rule picked it, said alike: its server read, it is confirmed valid (the
    # dashboard's words are redone once the baseline server's first reading confirms it).
    rule = checked["baseline_choice"]["rule"]
    assert rule == "latest valid of the configuration and protocol"
    assert shown["chosen_by"].split(";")[0] == rule


@pytest.mark.slow
def test_a_restarted_baseline_server_is_never_a_clean_speedup(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    with SimThread(replace(PLAIN, enable_metrics=False)) as plain:
        assert main(["bench", plain.url, "--runs", "2", "--max-tokens", "40", "--db", db]) == 0
        plain.call(plain.server.restart)  # same flags, metrics off: only its args tell
        capsys.readouterr()
        code, lines, _ = _check(capsys, sim.url, "--db", db)
    assert code == 1
    stale = [line for line in lines if "is stale" in line]
    assert len(stale) == 1 and "restarted since" in stale[0], lines
    assert not any(line.startswith("✓ vs baseline") for line in lines)
    # Gone altogether: the lifetime cannot be verified, so no clean ✓ either.
    code, lines, _ = _check(capsys, sim.url, "--db", db)
    assert code == 1
    assert any("cannot be read" in line for line in lines), lines


def test_bad_address_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _check(capsys, "ftp://x")
    assert code == 2
    assert (
        err.strip()
        == "specmon: error: unsupported scheme 'ftp' in 'ftp://x': use http:// or https://"
    )


@pytest.mark.parametrize(
    ("budget", "said"),
    [
        ("0", "must be more than 0 and at most 3600 seconds: 0"),
        ("soon", "not a number of seconds: 'soon'"),
    ],
)
def test_a_bad_budget_is_a_usage_error(
    budget: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", "http://127.0.0.1:9", "--budget", budget])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"specmon check: error: argument --budget: {said}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "sim", [replace(FAST, extra_args={"num_continuous_decode_steps": 3})], indirect=True
)
def test_advice_names_a_flag_that_does_nothing(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = empty_db
    code, lines, _ = _check(capsys, sim.url, "--db", db, "--probe-tokens", "60")
    assert code == 0, lines  # advice never changes the exit code
    assert (
        "· advice: --num-continuous-decode-steps 3 does nothing in SGLang 0.5.23 — change "
        "--num-continuous-decode-steps (no effect since 0.3.6: only the scheduler of 0.3.5 "
        "and earlier reads it; later it is a server arg and nothing more)"
    ) in lines
    assert main(["check", sim.url, "--db", db, "--probe-tokens", "60", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert [a["flag"] for a in body["advice"]] == ["--num-continuous-decode-steps"]
    assert body["advice"][0]["evidence"].startswith("no effect since 0.3.6")


class _Probes:
    """Probes of the simulator through `take_snapshot`, on a clock that moves `each_s` per
    probe; the probe numbered `fail_at` fails."""

    def __init__(self, url: str, each_s: float, fail_at: int | None = None) -> None:
        self.url, self.each_s, self.fail_at, self.taken = url, each_s, fail_at, 0

    async def __call__(self, protocol: Protocol) -> Snapshot:
        self.taken += 1
        if self.taken == self.fail_at:
            raise BenchInvalid("the server restarted or changed its flags during the bench")
        return await take_snapshot(Target(self.url), protocol, kind=SnapshotKind.RUN)

    def clock(self) -> float:
        return self.taken * self.each_s


async def _sequential_check(
    probes: _Probes, url: str, plain_url: str, base_tok_s: tuple[float, ...] = ()
) -> CheckReport:
    """`run_check` against a baseline of the plain server (its runs replaced by runs at
    `base_tok_s`, when given)."""
    protocol = Protocol(3, 0, 40, 0.0, DEFAULT_PROMPT)
    baseline = await take_snapshot(Target(plain_url), protocol, kind=SnapshotKind.BASELINE)
    if base_tok_s:
        baseline = replace(baseline, runs=tuple(run(t, tokens=39) for t in base_tok_s))

    async def same(_baseline: Snapshot) -> LifetimeCheck:
        return LifetimeCheck(LifetimeState.SAME, "the same server process")

    async with httpx.AsyncClient(base_url=url, timeout=10.0) as client:
        return await run_check(
            Connection(client),
            url,
            run_probe=probes,
            check_lifetime=same,
            find_baseline=lambda _info: BaselineLookup(replace(baseline, id=7)),
            budget_s=30.0,
            clock=probes.clock,
        )


@pytest.mark.slow
async def test_check_probes_until_its_budget_runs_out_and_says_how_long() -> None:
    async with SimServer(FAST) as spec, SimServer(PLAIN) as plain:
        # 12 s a probe against a 30 s budget: a third probe would end at 36 s.
        probes = _Probes(spec.url, each_s=12.0)
        report = await _sequential_check(probes, spec.url, plain.url)
    assert probes.taken == len(report.probes) == 2 and report.looks == 1
    assert report.verdict_after_s == 24.0
    verdict = report.findings[-1].text
    assert verdict.startswith("vs baseline #7") and "(98.3% interval)" in verdict
    assert "after 2 probes in 24.0 s" in verdict, verdict
    assert report.comparison is not None
    assert report.comparison.now_tok_s == pytest.approx(
        2 / sum(1 / r.decode_tok_s for r in report.probes if r.decode_tok_s), rel=0.01
    )


@pytest.mark.slow
async def test_a_failing_probe_after_the_first_is_said_and_no_verdict_given() -> None:
    async with SimServer(FAST) as spec, SimServer(PLAIN) as plain:
        probes = _Probes(spec.url, each_s=0.5, fail_at=2)
        report = await _sequential_check(probes, spec.url, plain.url)
    assert report.exit_code == EXIT_DEGRADED and report.comparison is None
    assert report.findings[-1].text == (
        "probe failed: the server restarted or changed its flags during the bench"
    )


@pytest.mark.slow
async def test_a_baseline_too_noisy_to_decide_is_named_with_what_to_do() -> None:
    # The H200's shape: three baseline runs far apart; ten probes cannot narrow its part.
    async with SimServer(FAST) as spec, SimServer(PLAIN) as plain:
        probes = _Probes(spec.url, each_s=0.5)
        report = await _sequential_check(probes, spec.url, plain.url, (190.0, 310.0, 250.0))
    assert report.comparison is not None and report.comparison.verdict == Verdict.WITHIN_NOISE
    assert len(report.probes) == 10
    assert report.findings[-1].text.endswith(
        "— within noise after 10 probes in 5.0 s, the cap; most of the interval is the "
        "baseline's own noise (3 runs, ±14.3% standard error): bench it again with more --runs"
    )


class _ThenBeside(_Probes):
    """The first probe alone, every later one beside another client's long generation."""

    def __init__(self, url: str, each_s: float) -> None:
        super().__init__(url, each_s)
        self.other: asyncio.Task[None] | None = None
        self.started = asyncio.Event()

    async def __call__(self, protocol: Protocol) -> Snapshot:
        if self.taken == 1 and self.other is None:
            self.other = asyncio.ensure_future(self._generate())
            await self.started.wait()
        return await super().__call__(protocol)

    async def _generate(self) -> None:
        body = {
            "text": "another client's prompt",
            "sampling_params": {"max_new_tokens": 100_000, "ignore_eos": True},
            "stream": True,
        }
        async with (
            httpx.AsyncClient(base_url=self.url, timeout=30) as client,
            client.stream("POST", "/generate", json=body) as answer,
        ):
            async for _ in answer.aiter_lines():
                self.started.set()


@pytest.mark.slow
async def test_conditions_are_judged_over_every_probe_not_the_first_alone() -> None:
    """The load changed after check's first probe: the verdict's probes did not all run as the
    baseline did, and check says so (it judged the first probe's conditions only)."""
    # Steps slow enough that a probe streams past the first load reading, and the running count
    # published at every step.
    gauges = {"decode_log_interval": 1}
    spec_config = replace(FAST, plain_step_ms=20.0, cycle_ms=40.0, extra_args=gauges)
    plain_config = replace(PLAIN, plain_step_ms=20.0, cycle_ms=40.0, extra_args=gauges)
    async with SimServer(spec_config) as spec, SimServer(plain_config) as plain:
        probes = _ThenBeside(spec.url, each_s=12.0)  # two probes in the 30 s budget
        try:
            report = await _sequential_check(probes, spec.url, plain.url)
        finally:
            if probes.other is not None:
                probes.other.cancel()
                await asyncio.gather(probes.other, return_exceptions=True)
    assert len(report.probes) == 2
    assert report.validity is not None and report.validity.conditions, report.findings
    said = [f.text for f in report.findings if f.text.startswith("conditions differ")]
    assert said == [f"conditions differ from the baseline's: {report.validity.conditions[0]}"]
    assert "beside 1 other request" in said[0]
    assert report.exit_code == EXIT_DEGRADED
