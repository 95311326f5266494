"""Router mode on the dashboard's path: the Watch of a router with its workers feeds LiveState;
a worker killed mid-run is named in the events log and in the server panel's state (partial
sums), its return is logged, `--once --json` carries every worker's status and the exporter
serves `specmon_worker_up`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families
from router import router
from watching import sampled

from specmon.cli import main
from specmon.config import FleetTarget, MonitorConfig
from specmon.exporter.metrics import WORKER_UP, ExportedTarget, render
from specmon.model import Protocol, Sample
from specmon.session.baselines import observe_lifetime
from specmon.session.fleet import Fleet
from specmon.session.live import LiveState
from specmon.session.server_session import ServerSession
from specmon.session.watch import Watch
from specmon.sim import SimConfig, SimServer
from specmon.sources.http import make_client
from specmon.sources.probe import run_probe
from specmon.target import Target

pytestmark = pytest.mark.slow  # servers on loopback

FAST = SimConfig(plain_step_ms=0.5, cycle_ms=0.5, ttft_ms=1.0, prefill_ms_per_token=0.0)


@contextlib.asynccontextmanager
async def workers_behind_a_router(count: int) -> AsyncIterator[tuple[list[SimServer], str]]:
    async with contextlib.AsyncExitStack() as stack:
        sims = [await stack.enter_async_context(SimServer(FAST)) for _ in range(count)]
        yield sims, await stack.enter_async_context(router([s.url for s in sims]))


async def _next_scrape(live: LiveState) -> Sample:
    """The first sample holding a /metrics reading newer than the current one."""
    assert live.sample is not None
    seq = live.sample.readings["metrics"].seq
    for _ in range(200):
        await asyncio.sleep(0.05)
        if live.sample.readings["metrics"].seq > seq + 1:  # one whole scrape after now
            return live.sample
    raise AssertionError("no new scrape")


async def test_a_killed_worker_is_named_in_the_events_and_the_server_panel() -> None:
    async with workers_behind_a_router(2) as (sims, url):
        target = Target(url, metrics_urls=tuple(s.url for s in sims))
        watch = Watch(target, interval=0.1, telemetry=False)
        live = LiveState(url, Protocol(5, 0, 64, 0.0, ""), max_age_s=1800, probe_every=10)
        async with sampled(watch, live):
            outcome = await watch.probe_once(64)
            live.on_probe(outcome.wall, outcome.t, outcome.figures, outcome.result)
            await _next_scrape(live)
            whole = live.view(now_wall=0.0, stale_after=60)
            await sims[1].stop()
            await _next_scrape(live)
            partial = live.view(now_wall=0.0, stale_after=60)
            await sims[1].start()
            await _next_scrape(live)
            back = live.view(now_wall=0.0, stale_after=60)
    assert whole.server.metrics_state == "ok" and whole.identity.state == "live"
    assert whole.spec.accept_length is not None  # the probe through the router counted steps
    name = sims[1].url.removeprefix("http://")
    assert partial.server.metrics_state.startswith(
        f"partial: 1 of 2 workers left out: worker {name} down since "
    )
    events = [e.text for e in back.events]
    assert any(f"worker {name} down since" in t and "left out" in t for t in events), events
    assert any(f"worker {name} back" in t for t in events), events
    assert back.server.metrics_state == "ok"
    assert [w.up for w in partial.server.workers] == [True, False]


async def test_once_json_names_every_worker(capsys: pytest.CaptureFixture[str]) -> None:
    async with workers_behind_a_router(2) as (sims, url):
        await sims[1].stop()
        argv = ["--once", "--json", "--url", url, "--no-history", "--probe-tokens", "40"]
        for sim in sims:
            argv += ["--metrics-url", sim.url]
        code = await asyncio.to_thread(main, argv)
    frame = json.loads(capsys.readouterr().out)
    assert code == 0
    (server,) = frame["servers"]
    workers = server["view"]["server"]["workers"]
    assert [w["url"] for w in workers] == [s.url for s in sims]
    assert workers[0]["error"] is None and "connection refused" in workers[1]["error"]
    assert server["view"]["server"]["metrics_state"].startswith("partial: 1 of 2 workers")


async def test_the_exporter_serves_each_workers_state() -> None:
    config = MonitorConfig(url="http://unused", interval=0.1, probe=False, history=False)
    async with workers_behind_a_router(2) as (sims, url):
        workers = tuple(s.url for s in sims)
        session = ServerSession.of_target(
            FleetTarget(url, metrics_url=workers), Target(url), config, None
        )
        exported = ExportedTarget(session)
        fleet = asyncio.create_task(Fleet([session]).run())
        try:
            await _until(lambda: session.view().server.metrics_state == "ok")
            whole = _worker_up(render([exported]).decode())
            await sims[0].stop()
            await _until(lambda: session.view().server.metrics_state.startswith("partial"))
            partial = _worker_up(render([exported]).decode())
        finally:
            fleet.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await fleet
    assert whole == {(url, workers[0]): 1.0, (url, workers[1]): 1.0}
    assert partial == {(url, workers[0]): 0.0, (url, workers[1]): 1.0}


def _worker_up(text: str) -> dict[tuple[str, str], float]:
    (family,) = [f for f in text_string_to_metric_families(text) if f.name == WORKER_UP]
    return {(s.labels["target"], s.labels["worker"]): s.value for s in family.samples}


async def _until(condition: Callable[[], bool]) -> None:
    """Wait for a condition of live servers, bounded (never a fixed sleep)."""
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.025)
    raise AssertionError("timed out")


async def test_a_lifetime_read_with_a_worker_down_keeps_no_counters() -> None:
    """A router's sums short of a worker would read as counters gone down: a restart."""
    async with workers_behind_a_router(2) as (sims, url):
        target = Target(url, metrics_urls=tuple(s.url for s in sims))
        for _ in sims:  # a request to each worker: its counters exist
            async with make_client(Target(url)) as client:
                await run_probe(client, prompt="Count.", max_tokens=8)
        whole = await observe_lifetime(target)
        await sims[1].stop()
        partial = await observe_lifetime(target)
    assert dict(whole.counters)["generation_tokens_total"] == 16
    assert partial.counters == () and partial.launch == whole.launch
