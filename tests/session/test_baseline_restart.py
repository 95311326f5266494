"""A baseline server relaunched as a new process with the same flags (and a fixed
`--random-seed`, so its args do not tell): the dashboard's baseline state and `check`'s lifetime
check both call the baseline stale, from the process's start time (issue 10: one truth). A
baseline taken at the server's own address between its relaunches stays valid (issue 25)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from specmon.analysis.validity import START_SLACK_S, LifetimeState
from specmon.config import FleetTarget, MonitorConfig
from specmon.measure.snapshot import SnapshotKind, default_protocol, take_snapshot
from specmon.model import Sample
from specmon.session.baseline_state import BaselineState
from specmon.session.baselines import BaselineOrigin, check_lifetime
from specmon.session.fleet import Fleet
from specmon.session.server_session import ServerSession
from specmon.session.watch import Watch
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store
from specmon.target import Target

pytestmark = pytest.mark.slow  # relaunches a simulator process

# Metrics off: no counters to go down, so only the process can tell.
PLAIN = ["--speculative-algorithm", "none", "--random-seed", "7", "--plain-step-ms", "2",
         "--ttft-ms", "5"]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@contextlib.contextmanager
def _sim(port: int) -> Iterator[None]:
    """The simulator as a process of its own, until the block ends."""
    argv = [sys.executable, "-m", "specmon.sim", "--port", str(port), *PLAIN]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):  # polls a condition (the server up), bounded
            assert process.poll() is None, "the simulator exited"
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("the simulator did not come up")
        yield
    finally:
        process.terminate()
        process.wait(timeout=30)


async def _sampled(watch: Watch, state: BaselineState, ticks: int) -> list[Sample]:
    """At least `ticks` samples of the baseline server, each handed to `state` as the dashboard
    does, and until one carries its process: a baseline server's process is read every
    `INFO_EVERY_S` in a thread, which a loaded machine may not finish within `ticks`."""
    seen: list[Sample] = []
    done = asyncio.Event()

    def emit(sample: Sample) -> None:
        state.on_server_sample(sample)
        seen.append(sample)
        if len(seen) >= ticks and any(s.telemetry and s.telemetry.server_process for s in seen):
            done.set()

    task = asyncio.create_task(watch.sample(emit, lambda _error: None))
    try:
        await asyncio.wait_for(done.wait(), timeout=60)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return seen


async def test_a_new_process_of_the_baseline_server_is_a_restart_everywhere() -> None:
    port = _free_port()
    target = Target(f"http://127.0.0.1:{port}")
    protocol = default_protocol(runs=2, warmup=0, tokens=20)
    state = BaselineState("http://127.0.0.1:1", protocol, max_age_s=1800)
    state.follow(target.url)
    watch = Watch(target, interval=0.2, telemetry=False)
    with _sim(port):
        baseline = await take_snapshot(target, protocol, kind=SnapshotKind.BASELINE)
        assert baseline.lifetime is not None and baseline.lifetime.started_at is not None
        state.set(baseline, BaselineOrigin.BASELINE_SERVER)
        samples = await _sampled(watch, state, ticks=3)
        assert any(s.telemetry and s.telemetry.server_process for s in samples)
        assert state.lifetime(None).state == LifetimeState.SAME
    # Start times within START_SLACK_S are one process's (a real server takes longer than that to
    # come back); a fast machine gets through the block above in about a second (CI did).
    await asyncio.sleep(max(0.0, baseline.lifetime.started_at + 2 * START_SLACK_S - time.time()))
    with _sim(port):  # the same flags, the same seed: a new process
        await _sampled(watch, state, ticks=3)
        dashboard = state.lifetime(None)
        checked = await check_lifetime(baseline, target, speculative=False)
    assert dashboard.state == LifetimeState.RESTARTED, dashboard.detail
    assert checked.state == LifetimeState.RESTARTED, checked.detail


async def test_a_baseline_taken_while_waiting_for_the_restart_stays_valid_after_it(
    tmp_path: Path,
) -> None:
    """Issue 25: "wait for the restart" on a vLLM server. It comes back plain, the baseline is
    taken there, it comes back with speculation: the events log, the panel and the exporter
    (all `LiveState`) agree that the baseline applies; none says "press b" (which looped)."""
    spec = SimConfig(
        backend="vllm", plain_step_ms=2.0, cycle_ms=4.0, accept_length=2.0, ttft_ms=5.0, seed=3
    )
    config = MonitorConfig(
        url="http://unused", interval=0.2, probe_every=0.3, probe_tokens=32, baseline_runs=2
    )
    with SimThread(spec) as sim, Store(tmp_path / "db") as store:
        session = ServerSession.of_target(FleetTarget(sim.url), Target(sim.url), config, store)
        task = asyncio.create_task(Fleet([session]).run())

        def speculative() -> bool | None:
            info = session.live.server.info
            return None if info is None else info.speculative is not None

        async def until(condition: Callable[[], bool]) -> None:
            deadline = asyncio.get_running_loop().time() + 60
            while not condition():  # polls a condition (the sampler's ticks), bounded
                assert asyncio.get_running_loop().time() < deadline, "not reached"
                await asyncio.sleep(0.02)

        try:
            await until(lambda: speculative() is True)
            plain = replace(spec, speculative_algorithm=None)
            await asyncio.to_thread(sim.call, lambda: sim.server.restart(plain))
            await until(lambda: speculative() is False)
            session.feed.start_bench(
                SnapshotKind.BASELINE, sim.url, BaselineOrigin.THIS_SERVER, None
            )
            await until(lambda: session.live.baseline.snapshot is not None)
            await asyncio.to_thread(sim.call, lambda: sim.server.restart(spec))
            await until(lambda: speculative() is True)
            await until(lambda: len(session.live.probes) >= 2)  # probes of the new lifetime
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    view = session.view()
    said = [e.text for e in view.events]
    assert not [t for t in said if "no longer applies" in t], said
    assert view.baseline.validity is not None and view.baseline.validity.valid
    assert view.baseline.comparison is not None
