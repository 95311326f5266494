"""`specmon web`'s hub: subscribers share one feed against real loopback servers (the simulator).

Each wait is for a condition, bounded; nothing sleeps for a fixed time.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from specmon.config import MonitorConfig, Targets
from specmon.errors import SpecmonError
from specmon.measure.snapshot import SnapshotKind
from specmon.session.baselines import BaselineOrigin
from specmon.session.feed import LocalFeed
from specmon.session.hub import Hub, HubFeed
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store
from specmon.target import Target

FAST = SimConfig(plain_step_ms=4.0, cycle_ms=7.0, accept_length=2.1, ttft_ms=5.0, seed=11)


@dataclass
class Recorder:
    """A FeedSink that keeps every call: (name, args)."""

    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args: self.calls.append((name, args))

    def of(self, name: str) -> list[tuple[Any, ...]]:
        return [args for called, args in self.calls if called == name]


async def until(condition: Callable[[], bool], limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


@pytest.fixture
def sims() -> Iterator[tuple[SimThread, SimThread]]:
    with SimThread(FAST) as spec, SimThread(replace(FAST, speculative_algorithm=None)) as base:
        yield spec, base


@pytest.fixture
async def hub(sims: tuple[SimThread, SimThread], tmp_path: Path) -> AsyncIterator[Hub]:
    spec, base = sims
    config = MonitorConfig(
        url=spec.url,
        baseline_url=base.url,
        interval=0.2,
        probe_every=0.2,
        probe_tokens=24,
        baseline_runs=2,
        db=str(tmp_path / "db"),
    )
    targets = Targets(Target(spec.url), Target(base.url))
    with Store(tmp_path / "db") as store, tempfile.TemporaryDirectory() as private:
        hub = Hub(LocalFeed(config, targets, store), Path(private))
        task = asyncio.create_task(hub.run())
        await until(hub.path.exists)
        yield hub
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def _subscribe(hub: Hub) -> tuple[HubFeed, Recorder, asyncio.Task[None]]:
    feed, config = await asyncio.to_thread(HubFeed.connect, str(hub.path))
    assert config == hub.feed.config
    recorder = Recorder()
    return feed, recorder, asyncio.create_task(feed.run(recorder))  # type: ignore[arg-type]


@pytest.mark.slow
async def test_two_tabs_see_one_probe_stream_and_one_baseline(
    hub: Hub, sims: tuple[SimThread, SimThread]
) -> None:
    spec, base = sims
    (a, seen_a, task_a), (b, seen_b, task_b) = [await _subscribe(hub) for _ in range(2)]
    await until(lambda: len(seen_b.of("probe_done")) >= 3 and len(seen_b.of("sample")) >= 2)
    probes_a = [args[0] for args in seen_a.of("probe_done")]
    probes_b = [args[0] for args in seen_b.of("probe_done")]
    assert probes_b == probes_a[-len(probes_b) :]  # the same probes, not one stream each
    # Counted at the server: as many probes as each tab saw (and maybe one still streaming).
    assert len(probes_a) <= spec.server.requests["/generate"] <= len(probes_a) + 1

    a.start_bench(SnapshotKind.BASELINE, base.url, BaselineOrigin.BASELINE_SERVER, None)
    await until(lambda: bool(seen_a.of("bench_done")) and bool(seen_b.of("bench_done")))
    ((snapshot, kind, origin),) = seen_b.of("bench_done")
    assert seen_a.of("bench_done") == [(snapshot, kind, origin)]
    assert kind == SnapshotKind.BASELINE and origin == BaselineOrigin.BASELINE_SERVER
    assert snapshot.id is not None and snapshot.url == base.url
    assert seen_b.of("bench_progress")[0][0].done == 0  # b saw it start, though a asked

    b.pause_probe(True)
    await until(lambda: seen_a.of("probe_paused") == [(True,)])
    assert hub.feed.probe_is_paused
    for task in (task_a, task_b):
        task.cancel()


@pytest.mark.slow
async def test_a_tab_that_opens_later_sees_the_pause_and_a_bench_under_way(hub: Hub) -> None:
    a, _, task_a = await _subscribe(hub)
    a.pause_probe(True)
    await until(lambda: hub.feed.probe_is_paused)
    hub.feed.start_bench(SnapshotKind.RUN, hub.feed.config.url, None, "later")
    _, seen, task = await _subscribe(hub)
    await until(lambda: bool(seen.of("bench_progress")))
    assert seen.calls[0] == ("probe_paused", (True,))
    assert seen.of("bench_progress")[0][0].kind == "snapshot"
    task.cancel()
    task_a.cancel()


async def test_a_request_no_tab_sends_drops_only_that_tab(hub: Hub) -> None:
    _, seen, task = await _subscribe(hub)
    rogue = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    rogue.setblocking(False)
    await asyncio.get_running_loop().sock_connect(rogue, str(hub.path))
    body = (
        b'{"op": "bench", "kind": "baseline", "url": "http://elsewhere:1", "origin": null, '
        b'"label": null}'
    )
    await asyncio.get_running_loop().sock_sendall(rogue, struct.pack(">I", len(body)) + body)
    await until(lambda: hub.subscribed == 2 and len(hub._tabs) == 1)
    rogue.close()
    assert not hub.feed.bench_running  # not a URL of this dashboard: refused
    count = len(seen.of("sample"))
    await until(lambda: len(seen.of("sample")) > count)  # the other tab is still fed
    task.cancel()


async def test_a_read_only_hub_drops_a_tab_that_asks_for_a_bench(hub: Hub) -> None:
    """`specmon web --readonly`: the tabs' keys for benches are off, and the hub refuses one
    asked anyway (of the dashboard's own server, which it would otherwise bench)."""
    hub.read_only = True
    tab, _, task = await _subscribe(hub)
    tab.start_bench(SnapshotKind.RUN, hub.feed.config.url, None, "refused")
    await until(lambda: task.done())  # dropped: its feed ends
    assert not hub.feed.bench_running and hub._tabs == set()


async def test_a_read_only_viewer_cannot_pause_the_shared_probe(hub: Hub) -> None:
    """Issue 36: in `--readonly`, one viewer's `p` paused the probe for every tab, for good."""
    hub.read_only = True
    tab, _, task = await _subscribe(hub)
    _, others_seen, other_task = await _subscribe(hub)
    tab.pause_probe(True)
    await until(lambda: task.done())  # the asking tab is dropped
    assert not hub.feed.probe_is_paused
    assert hub._tabs and not others_seen.of("probe_paused")  # the other tab goes on unpaused
    other_task.cancel()


def test_no_hub_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SpecmonError, match=r"^no specmon web hub at .*nothing\.sock: "):
        HubFeed.connect(str(tmp_path / "nothing.sock"))
