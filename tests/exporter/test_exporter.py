"""`specmon exporter` against simulated servers: its text parses with prometheus-client's
parser, its figures are `specmon bench`'s, and the probe rate is the one asked for (counted at
the simulator)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from specmon.analysis.catalogue import Measured
from specmon.analysis.pooled import Pooled
from specmon.analysis.validity import ValidityState
from specmon.cli import main
from specmon.config import FleetTarget, MonitorConfig
from specmon.exporter.metrics import EXPORTED
from specmon.exporter.server import (
    AD_HOC_IDLE_S,
    AD_HOC_PER_MINUTE,
    IDLE_TARGET_S,
    MAX_AD_HOC,
    Exporter,
)
from specmon.session.fleet import Fleet
from specmon.session.server_session import ServerSession
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store
from specmon.target import Target

TOKENS = 150
# Every draft accepted (accept length = draft tokens): the acceptance draws are then the same
# for the exporter's probes and bench's runs, and 2% measures specmon, not the dice. Steps of
# 15-20 ms and runs of about a second keep a busy machine's scheduling jitter (a late first
# chunk, which the simulator's deadlines then catch up) well inside 2%.
A = SimConfig(plain_step_ms=10.0, cycle_ms=20.0, accept_length=3.0, ttft_ms=10.0, seed=7)
B = replace(
    A,
    speculative_num_steps=1,
    speculative_num_draft_tokens=2,
    accept_length=2.0,
    cycle_ms=15.0,
    tp_size=4,
)
LIMIT_S = 60.0


@pytest.fixture
def servers() -> Iterator[tuple[SimThread, SimThread, SimThread]]:
    """Two speculative servers and the plain twin of the first."""
    with (
        SimThread(A) as a,
        SimThread(B) as b,
        SimThread(replace(A, speculative_algorithm=None)) as plain,
    ):
        yield a, b, plain


def _config(**changes: object) -> MonitorConfig:
    base = MonitorConfig(
        url="http://unused", interval=0.2, probe_every=0.3, probe_tokens=TOKENS, baseline_runs=2
    )
    return replace(base, **changes)  # type: ignore[arg-type]


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait for a condition of live servers, bounded (never a fixed sleep)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT_S
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def _serving(
    fleet: Fleet, exporter: Exporter, body: Callable[[httpx.AsyncClient], Awaitable[object]]
) -> object:
    """Run the fleet and its exporter around `body`, then stop both."""
    await exporter.start()
    task = asyncio.create_task(fleet.run())
    try:
        async with httpx.AsyncClient(base_url=exporter.url, timeout=10) as client:
            return await body(client)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await exporter.stop()


def _families(text: str) -> dict[str, Metric]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def _value(families: dict[str, Metric], name: str, target: str) -> float:
    (value,) = [s.value for s in families[name].samples if s.labels.get("target") == target]
    return float(value)


def _has(families: dict[str, Metric], name: str, target: str) -> bool:
    return any(s.labels.get("target") == target for s in families[name].samples)


def _states(families: dict[str, Metric], target: str) -> dict[str, float]:
    samples = families["specmon_baseline_state"].samples
    return {s.labels["state"]: s.value for s in samples if s.labels["target"] == target}


def _bench(url: str, db: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code = main(
        [
            "bench",
            url,
            "--runs",
            "3",
            "--warmup",
            "0",
            "--max-tokens",
            str(TOKENS),
            "--json",
            "--db",
            str(db),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    body = json.loads(out.out)
    assert isinstance(body, dict)
    return body


@pytest.mark.slow
def test_two_servers_export_what_bench_measures(
    servers: tuple[SimThread, SimThread, SimThread],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b, plain = servers
    store = Store(tmp_path / "exporter.db")
    config = _config()
    sessions = [
        ServerSession.of_target(
            FleetTarget(a.url, plain.url, "a"), Target(a.url), config, store, take_baselines=True
        ),
        ServerSession.of_target(FleetTarget(b.url), Target(b.url), config, store),
    ]
    fleet = Fleet(sessions)

    async def scrape(client: httpx.AsyncClient) -> str:
        await _until(lambda: all(s.probes_ok >= 5 for s in sessions), "five probes each")
        await _until(lambda: sessions[0].live.baseline.snapshot is not None, "a baseline")
        response = await client.get("/metrics")
        assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
        return response.text

    text = asyncio.run(_serving(fleet, Exporter(fleet, "127.0.0.1", 0), scrape))
    store.close()
    assert isinstance(text, str)
    families = _families(text)
    assert families["specmon_cycle_seconds"].type == "histogram"
    assert families["specmon_probes"].type == "counter"  # served as specmon_probes_total
    assert {s.name for s in families["specmon_probes"].samples} == {"specmon_probes_total"}
    info = {s.labels["target"]: s.labels for s in families["specmon_target_info"].samples}
    assert info[a.url]["algorithm"] == "EAGLE3" and info[a.url]["name"] == "a"
    assert info[b.url]["tp_size"] == "4" and info[b.url]["backend"] == "sglang"
    for sim in (a, b):
        assert _value(families, "specmon_probe_success", sim.url) == 1.0
        assert _value(families, "specmon_target_up", sim.url) == 1.0
    # The first server has a baseline that applies; the second none, so no speedup sample.
    assert _states(families, a.url) == {"valid": 1.0, "unverified": 0.0, "stale": 0.0}
    low, gain, high = (
        _value(families, f"specmon_speedup_ratio{end}", a.url) for end in ("_low", "", "_high")
    )
    assert 0 < low <= gain <= high
    assert 0 <= _value(families, "specmon_baseline_age_seconds", a.url) < LIMIT_S
    assert all(s.labels["target"] != b.url for s in families["specmon_speedup_ratio"].samples)
    assert all(s.labels["target"] != b.url for s in families["specmon_baseline_state"].samples)
    cycles = {
        (s.name, s.labels.get("le")): s.value
        for s in families["specmon_cycle_seconds"].samples
        if s.labels["target"] == a.url
    }
    count = cycles[("specmon_cycle_seconds_count", None)]
    assert cycles[("specmon_cycle_seconds_bucket", "+Inf")] == count > 0
    mean = cycles[("specmon_cycle_seconds_sum", None)] / count
    assert mean == pytest.approx(A.cycle_ms / 1000, rel=0.2)
    for sim in (a, b):
        pooled = _bench(sim.url, tmp_path / "bench.db", capsys)["pooled"]
        assert isinstance(pooled, dict)
        exported_tok_s = _value(families, "specmon_probe_decode_tokens_per_second", sim.url)
        exported_accept = _value(families, "specmon_probe_accept_length", sim.url)
        assert exported_tok_s == pytest.approx(pooled["decode_tok_s"], rel=0.02)
        assert exported_accept == pytest.approx(pooled["accept_length"], rel=0.02)


LIVE_FIGURES = tuple(name for name, _ in EXPORTED)
"""What describes the server now: served only while it is true now (the catalogue's gauges,
the recent probes' TTFT among them)."""
_PROBES_ALONE = Measured(
    Pooled(runs=3, decode_tok_s=100.0, rel_se=0.01, accept_length=2.0, cycle_ms=20.0, ttft_ms=15.0)
)
COMPARISON = tuple(name for name, figure in EXPORTED if figure.get(_PROBES_ALONE) is None)
"""The catalogue's gauges a comparison holds: withdrawn while the baseline does not apply."""


@pytest.mark.slow
def test_figures_that_no_longer_hold_are_withdrawn(tmp_path: Path) -> None:
    """Issue 24 §4: a baseline too old, a failing probe, a killed baseline server and a killed
    target each take away what no longer holds, at the first reading that shows it (the first
    failed probe: within one probe period), and nothing else."""
    ahead = [0.0]  # seconds the session's wall clock is moved forward
    last_ok: list[float | None] = []

    def wall() -> float:
        return time.time() + ahead[0]

    with SimThread(A) as spec, SimThread(replace(A, speculative_algorithm=None)) as plain:
        store = Store(tmp_path / "exporter.db")
        session = ServerSession.of_target(
            FleetTarget(spec.url, plain.url),
            Target(spec.url),
            _config(),
            store,
            take_baselines=True,
            wall=wall,
        )
        fleet = Fleet([session])

        def state() -> ValidityState | None:
            validity = session.view().baseline.validity
            return validity.state if validity is not None else None

        async def scrape(client: httpx.AsyncClient) -> dict[str, Metric]:
            return _families((await client.get("/metrics")).text)

        async def phases(client: httpx.AsyncClient) -> dict[str, dict[str, Metric]]:
            seen = {}
            await _until(
                lambda: state() == ValidityState.VALID and session.probes_ok >= 3,
                "a valid baseline and three probes",
            )
            seen["live"] = await scrape(client)
            ahead[0] = 3600.0  # the baseline is an hour old
            seen["too old"] = await scrape(client)
            ahead[0] = 0.0
            spec.server.faults.status["/generate"] = 500
            failed = session.probes_failed
            await _until(lambda: session.probes_failed > failed, "a failed probe")
            seen["probe failing"] = await scrape(client)
            # Probes run one after another: none succeeds after the failed one, while failing.
            last_ok.append(session.last_probe_success_wall)
            spec.server.faults.clear()
            await _until(lambda: session.last_probe_ok is True, "a probe that succeeds")
            seen["recovered"] = await scrape(client)
            plain.call(plain.server.stop)
            await _until(lambda: state() == ValidityState.UNVERIFIED, "the baseline unverified")
            seen["baseline server killed"] = await scrape(client)
            spec.call(spec.server.stop)
            failed = session.probes_failed
            await _until(lambda: session.probes_failed > failed, "the first probe after the kill")
            seen["target killed, first probe"] = await scrape(client)
            await _until(lambda: session.view().identity.state == "down", "the target down")
            seen["target down"] = await scrape(client)
            return seen

        seen = asyncio.run(_serving(fleet, Exporter(fleet, "127.0.0.1", 0), phases))
        store.close()
    assert isinstance(seen, dict)
    url = spec.url

    assert {"specmon_speedup_ratio", "specmon_break_even_accept_length"} <= set(COMPARISON)
    probes_alone = {"specmon_probe_decode_seconds_per_token", "specmon_probe_ttft_seconds"}
    assert probes_alone <= set(LIVE_FIGURES) - set(COMPARISON)

    def present(phase: str) -> set[str]:
        return {name for name in LIVE_FIGURES if _has(seen[phase], name, url)}

    assert present("live") == present("recovered") == set(LIVE_FIGURES)
    assert _states(seen["live"], url) == {"valid": 1.0, "unverified": 0.0, "stale": 0.0}
    # An hour old: stale, so no speedup nor break-even; the probe figures stay.
    assert present("too old") == set(LIVE_FIGURES) - set(COMPARISON)
    assert _states(seen["too old"], url)["stale"] == 1.0
    assert _value(seen["too old"], "specmon_baseline_age_seconds", url) >= 3600
    # The probe fails, the server answers: no probe figure, the baseline still judged.
    failing = seen["probe failing"]
    assert present("probe failing") == set()
    assert _value(failing, "specmon_probe_success", url) == 0.0
    assert _value(failing, "specmon_target_up", url) == 1.0
    assert _states(failing, url)["valid"] == 1.0
    assert [_value(failing, "specmon_last_probe_success_timestamp_seconds", url)] == last_ok
    # The baseline server killed: `check`'s word, unverified (it applies as far as is known).
    assert _states(seen["baseline server killed"], url) == {
        "valid": 0.0,
        "unverified": 1.0,
        "stale": 0.0,
    }
    assert present("baseline server killed") == set(LIVE_FIGURES)
    # The target killed: its first failed probe takes every live figure away; once it is down
    # its baseline is judged no more either. The baseline's own figures and the time of the
    # last success stay.
    for phase in ("target killed, first probe", "target down"):
        assert present(phase) == set(), phase
        assert _has(seen[phase], "specmon_last_probe_success_timestamp_seconds", url)
        assert _has(seen[phase], "specmon_baseline_age_seconds", url)
    assert _value(seen["target down"], "specmon_target_up", url) == 0.0
    assert _states(seen["target down"], url) == {}


class FakeTime:
    """A monotonic clock that moves only when the probe loop sleeps or a probe "takes" time;
    past `end` the loop's sleep never returns, and `ended` is set."""

    def __init__(self, end: float) -> None:
        self.now = 0.0
        self.end = end
        self.ended = asyncio.Event()

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        if self.now + seconds > self.end:
            self.ended.set()
            await asyncio.Event().wait()
        self.now += seconds
        await asyncio.sleep(0)


@pytest.mark.slow
@pytest.mark.parametrize("probe_s", [0.0, 3.0], ids=["instant", "3s-probes"])
def test_the_probe_rate_is_the_one_asked_for(probe_s: float) -> None:
    """--probe-every 10 over 60 s: probes start at 0, 10, … 60, whatever a probe takes (the
    cadence is drift-free), counted in the simulator's own record of requests."""
    with SimThread(replace(A, cycle_ms=2.0, plain_step_ms=1.0)) as sim:  # only counts matter
        time = FakeTime(end=60.0)
        config = _config(probe_every=10.0)
        session = ServerSession.of_target(
            FleetTarget(sim.url), Target(sim.url), config, None, clock=time.clock, sleep=time.sleep
        )

        def slow(_outcome: object) -> None:
            time.now += probe_s

        session.probe_listeners.append(slow)

        async def run() -> None:
            task = asyncio.create_task(session.run())
            await asyncio.wait_for(time.ended.wait(), LIMIT_S)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(run())
        probes = [r for r in sim.server.emitted if r.max_new_tokens == TOKENS]
    assert session.probes_failed == 0
    assert len(probes) == session.probes_ok == 7


@pytest.mark.slow
def test_multi_target_probes_once_per_scrape(
    servers: tuple[SimThread, SimThread, SimThread],
) -> None:
    a, b, _ = servers
    config = _config()
    fleet = Fleet(
        [ServerSession.of_target(FleetTarget(a.url), Target(a.url), config, None, probing=False)]
    )
    added: list[str] = []

    def new_session(url: str) -> ServerSession:
        added.append(url)
        return ServerSession.of_target(FleetTarget(url), Target(url), config, None, probing=False)

    exporter = Exporter(fleet, "127.0.0.1", 0, multi_target=True, new_session=new_session)

    async def scrapes(client: httpx.AsyncClient) -> list[httpx.Response]:
        answers = [await client.get("/probe", params={"target": a.url}) for _ in range(3)]
        answers.append(await client.get("/probe", params={"target": b.url}))
        answers.append(await client.get("/probe"))
        answers.append(await client.get("/probe", params={"target": "ftp://x"}))
        return answers

    answers = asyncio.run(_serving(fleet, exporter, scrapes))
    assert isinstance(answers, list)
    for answer in answers[:4]:
        assert answer.status_code == 200, answer.text
    families = _families(answers[2].text)
    assert {s.labels["target"] for s in families["specmon_probes"].samples} == {a.url}
    assert _value(families, "specmon_probe_success", a.url) == 1.0
    ok = [s.value for s in families["specmon_probes"].samples if s.labels["result"] == "success"]
    assert ok == [3.0]
    # Three scrapes of a, one of b: as many probes at each server, none in the background.
    assert len([r for r in a.server.emitted if r.max_new_tokens == TOKENS]) == 3
    assert len([r for r in b.server.emitted if r.max_new_tokens == TOKENS]) == 1
    assert added == [b.url]
    assert answers[4].status_code == 400 and "?target=URL" in answers[4].text
    assert answers[5].status_code == 400 and "unsupported scheme" in answers[5].text


def test_probe_refuses_other_targets_and_needs_the_mode(
    servers: tuple[SimThread, SimThread, SimThread],
) -> None:
    a, b, _ = servers
    fleet = Fleet(
        [ServerSession.of_target(FleetTarget(a.url), Target(a.url), _config(), None, probing=False)]
    )

    async def scrape(client: httpx.AsyncClient) -> httpx.Response:
        return await client.get("/probe", params={"target": b.url})

    refused = asyncio.run(
        _serving(fleet, Exporter(fleet, "127.0.0.1", 0, multi_target=True), scrape)
    )
    assert isinstance(refused, httpx.Response)
    assert refused.status_code == 403 and "--allow-target PATTERN accepts more" in refused.text
    off = asyncio.run(_serving(fleet, Exporter(fleet, "127.0.0.1", 0), scrape))
    assert isinstance(off, httpx.Response)
    assert off.status_code == 404 and "--multi-target" in off.text
    assert not b.server.emitted


@pytest.mark.slow
def test_the_key_goes_only_to_targets_an_allow_pattern_vouches_for(tmp_path: Path) -> None:
    """`--any-target` lets a scraper name any server; only those the user configured or
    matched with `--allow-target` get the API key (both servers here need it)."""
    key = "sk-exporter-7c1e"
    with SimThread(replace(A, api_key=key)) as vouched, SimThread(replace(B, api_key=key)) as other:
        command = [
            sys.executable,
            "-m",
            "specmon",
            "exporter",
            "--url",
            vouched.url,
            "--listen",
            "127.0.0.1:0",
            "--multi-target",
            "--any-target",
            "--allow-target",
            f"127.0.0.1:{vouched.url.rsplit(':', 1)[1]}",
            "--db",
            str(tmp_path / "db"),
            "--probe-tokens",
            str(TOKENS),
        ]
        exporter = subprocess.Popen(
            command, stdout=subprocess.PIPE, text=True, env={**os.environ, "SPECMON_API_KEY": key}
        )
        assert exporter.stdout is not None
        try:
            first = exporter.stdout.readline()
            address = re.search(r"serving (http://\S+)/metrics", first)
            assert address, first
            with httpx.Client(base_url=address.group(1), timeout=LIMIT_S) as client:
                answers = {
                    url: client.get("/probe", params={"target": url}).text
                    for url in (vouched.url, other.url)
                }
        finally:
            exporter.terminate()
            exporter.wait(timeout=30)
            exporter.stdout.close()
    assert _value(_families(answers[vouched.url]), "specmon_probe_success", vouched.url) == 1.0
    # Let in by --any-target, without the key: the server refuses the probe.
    assert _value(_families(answers[other.url]), "specmon_probe_success", other.url) == 0.0
    assert not [r for r in other.server.emitted if r.max_new_tokens == TOKENS]


@pytest.mark.slow
def test_a_target_no_scrape_names_any_more_is_forgotten(
    servers: tuple[SimThread, SimThread, SimThread],
) -> None:
    """A scraper that named a server once does not keep it sampled for good."""
    a, b, _ = servers
    config = _config()
    fleet = Fleet(
        [ServerSession.of_target(FleetTarget(a.url), Target(a.url), config, None, probing=False)]
    )
    now = [0.0]

    def new_session(url: str) -> ServerSession:
        return ServerSession.of_target(FleetTarget(url), Target(url), config, None, probing=False)

    exporter = Exporter(
        fleet,
        "127.0.0.1",
        0,
        multi_target=True,
        new_session=new_session,
        clock=lambda: now[0],
        vouched=lambda url: True,  # as --allow-target: kept IDLE_TARGET_S
    )

    async def scrapes(client: httpx.AsyncClient) -> list[str]:
        for url in (a.url, b.url):
            assert (await client.get("/probe", params={"target": url})).status_code == 200
        now[0] = IDLE_TARGET_S - 1
        assert exporter.forget_idle() == []  # named a little under the limit ago: kept
        assert (await client.get("/probe", params={"target": b.url})).status_code == 200
        now[0] += IDLE_TARGET_S
        forgotten = exporter.forget_idle()
        assert [s.url for s in fleet.sessions] == [a.url]  # the configured one stays
        assert b.url not in fleet._tasks  # its sampler stopped
        metrics = (await client.get("/metrics")).text
        shown = {s.labels["target"] for s in _families(metrics)["specmon_probes"].samples}
        assert shown == {a.url}
        return forgotten

    assert asyncio.run(_serving(fleet, exporter, scrapes)) == [b.url]


def _ad_hoc_exporter(fleet: Fleet, now: list[float]) -> Exporter:
    """A multi-target exporter that lets any target in (`--any-target`), vouching for none."""
    config = _config()

    def new_session(url: str) -> ServerSession:
        return ServerSession.of_target(FleetTarget(url), Target(url), config, None, probing=False)

    return Exporter(
        fleet,
        "127.0.0.1",
        0,
        multi_target=True,
        new_session=new_session,
        connect_timeout=1.0,
        clock=lambda: now[0],
    )


def _refused_urls(count: int) -> list[str]:
    """Addresses where nothing listens (loopback ports 1 to `count`: privileged, unused)."""
    return [f"http://127.0.0.1:{port}" for port in range(1, count + 1)]


@pytest.mark.slow
def test_ad_hoc_targets_expire_soon_are_rate_limited_and_not_listed(
    servers: tuple[SimThread, SimThread, SimThread],
) -> None:
    """Issue 36: with --any-target, one unauthenticated /probe kept a named host polled for 15
    minutes, any number could be added, and / listed every target anyone had named."""
    a, b, _ = servers
    fleet = Fleet(
        [ServerSession.of_target(FleetTarget(a.url), Target(a.url), _config(), None, probing=False)]
    )
    now = [0.0]
    exporter = _ad_hoc_exporter(fleet, now)

    async def scrapes(client: httpx.AsyncClient) -> None:
        assert (await client.get("/probe", params={"target": b.url})).status_code == 200
        index = (await client.get("/")).text
        assert a.url in index and b.url not in index
        assert "and 1 named by scrapers of /probe (not listed)" in index
        # Kept while scrapes go on naming it, forgotten a minute after the last.
        now[0] = AD_HOC_IDLE_S - 1
        assert exporter.forget_idle() == []
        assert (await client.get("/probe", params={"target": b.url})).status_code == 200
        now[0] += AD_HOC_IDLE_S
        assert exporter.forget_idle() == [b.url]
        assert [s.url for s in fleet.sessions] == [a.url]
        # At most AD_HOC_PER_MINUTE new ones a minute (b's, a minute ago, no longer counts).
        urls = _refused_urls(MAX_AD_HOC + 1)
        for url in urls[:AD_HOC_PER_MINUTE]:
            assert (await client.get("/probe", params={"target": url})).status_code == 200
        limited = await client.get("/probe", params={"target": urls[AD_HOC_PER_MINUTE]})
        assert limited.status_code == 429 and limited.headers["retry-after"] == "60"
        assert "new targets a minute at most" in limited.text
        # A minute on (each named again meanwhile), room for more, up to MAX_AD_HOC at once.
        now[0] += 59
        for url in urls[:AD_HOC_PER_MINUTE]:
            assert (await client.get("/probe", params={"target": url})).status_code == 200
        now[0] += 1
        for url in urls[AD_HOC_PER_MINUTE:MAX_AD_HOC]:
            assert (await client.get("/probe", params={"target": url})).status_code == 200
        full = await client.get("/probe", params={"target": urls[MAX_AD_HOC]})
        assert full.status_code == 429 and f"already {MAX_AD_HOC} targets" in full.text
        # The configured target is served whatever scrapers named.
        assert (await client.get("/probe", params={"target": a.url})).status_code == 200

    asyncio.run(_serving(fleet, exporter, scrapes))


async def _not_a_server() -> tuple[Any, str]:
    """An HTTP server that answers every path 404 (a web server, not an LLM server)."""
    from aiohttp import web

    app = web.Application()
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


def test_a_probe_of_an_ad_hoc_target_says_up_or_not_and_no_more() -> None:
    """Issue 36: /probe?target= as a port scanner. A port where nothing listens and one where a
    web server that is no LLM server listens answer the same families and figures."""
    fleet = Fleet([])
    exporter = _ad_hoc_exporter(fleet, [0.0])

    async def scrapes(client: httpx.AsyncClient) -> dict[str, str]:
        runner, web_server = await _not_a_server()
        try:
            answers = {}
            for url in (_refused_urls(1)[0], web_server):
                answer = await client.get("/probe", params={"target": url})
                assert answer.status_code == 200
                answers[url] = answer.text.replace(url, "TARGET")
            return answers
        finally:
            await runner.cleanup()

    answers = asyncio.run(_serving(fleet, exporter, scrapes))
    assert isinstance(answers, dict)
    refused, not_llm = answers.values()
    assert refused == not_llm
    assert _value(_families(refused), "specmon_target_up", "TARGET") == 0.0
