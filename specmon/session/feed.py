"""Where the dashboard's data comes from: one interface, a local and a shared implementation.

A server's session (`ServerSession`, the `FeedSink`) gets every Sample, probe outcome and bench
event from a `Feed`; it never samples, probes or benches itself. `LocalFeed` (here) does that I/O in
this process. `specmon web` runs one `LocalFeed` in a hub that every browser tab subscribes to
(`specmon.session.hub`), so that tabs share one sampler and one probe stream and a baseline one
tab takes is every tab's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from specmon.config import MonitorConfig, Targets
from specmon.errors import SpecmonError
from specmon.measure.snapshot import Progress, SnapshotKind, default_protocol, take_snapshot
from specmon.model import Protocol as BenchProtocol
from specmon.model import Sample, Snapshot
from specmon.session.baselines import BaselineOrigin
from specmon.session.view import BenchView
from specmon.session.watch import BASELINE_SERVER_EVERY_S, ProbeOutcome, Watch
from specmon.sources.http import load_client_transport
from specmon.storage.saving import save_or_keep
from specmon.storage.store import Store
from specmon.storage.unsaved import Unsaved


def bench_protocol(config: MonitorConfig) -> BenchProtocol:
    """The protocol of the dashboard's benches (`b`, `s`): one warm-up, then the runs."""
    return default_protocol(config.baseline_runs, 1, config.probe_tokens)


BENCH_CANCELLED = "cancelled: nothing saved"
"""What `bench_failed` says of a bench the user cancelled (Esc): said as "cancelled", not as a
failure."""


class Relauncher(Protocol):
    """A server specmon launched (`specmon.launch.relaunch.ManagedServer`, handed in by
    `specmon launch`): its baseline is taken by relaunching it without speculation."""

    def take_baseline(
        self,
        protocol: BenchProtocol,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        say: Callable[[str], None] = ...,
        wall: Callable[[], float] = ...,
    ) -> Awaitable[Snapshot]:
        """Relaunch it without speculation, bench the baseline, relaunch it with speculation."""
        ...


class FeedSink(Protocol):
    """What a feed reports to: the server's session (`ServerSession`)."""

    def sample(self, sample: Sample) -> None:
        """A tick of the monitored server's sampler."""

    def baseline_sample(self, sample: Sample) -> None:
        """A tick of the baseline server's sampler (watched for its restarts)."""

    def probe_done(self, outcome: ProbeOutcome) -> None:
        """A live probe finished."""

    def probe_failed(self, wall: float, error: str) -> None:
        """A live probe failed; `error` is one line."""

    def telemetry_failed(self, wall: float, error: str) -> None:
        """GPU and host telemetry could not be set up (sampling goes on without it)."""

    def probe_paused(self, paused: bool) -> None:
        """Someone else sharing the feed paused or resumed the probe."""

    def bench_progress(self, progress: BenchView) -> None:
        """A bench started or finished one more run."""

    def bench_done(
        self, snapshot: Snapshot, kind: SnapshotKind, origin: BaselineOrigin | None
    ) -> None:
        """A bench completed and was saved (`snapshot.id` is set)."""

    def bench_failed(self, kind: SnapshotKind, error: str) -> None:
        """A bench failed or was cancelled: nothing was saved."""

    def bench_note(self, wall: float, note: str) -> None:
        """A running bench said a line: that it benches again after a refusal, and why; what a
        relaunched baseline is doing (the servers stopped and started)."""


class Feed(Protocol):
    """The dashboard's source of samples, probes and benches."""

    async def run(self, sink: FeedSink) -> None:
        """Sample and probe, reporting to `sink`, until cancelled."""

    def follow_baseline_server(self, url: str | None) -> None:
        """Sample the baseline's server for its restarts (None: none to follow)."""

    def start_bench(
        self, kind: SnapshotKind, url: str, origin: BaselineOrigin | None, label: str | None
    ) -> None:
        """Bench `url` and save the snapshot; ignored while a bench runs."""

    def cancel_bench(self) -> bool:
        """Cancel the bench in progress; False when it is too late (it is being saved)."""

    def pause_probe(self, paused: bool) -> None:
        """Pause or resume the probe (`p`)."""


class NoServerFeed:
    """The part of a `Feed` that reaches a server, for a feed that reaches none (a replay,
    `check`'s session): no baseline server to follow, no bench, no probe to pause. The
    surfaces they feed never ask for a bench or a pause (a replay refuses those keys)."""

    def follow_baseline_server(self, url: str | None) -> None:
        """Nothing to follow: the baseline server's readings come otherwise, or not at all."""

    def start_bench(
        self, kind: SnapshotKind, url: str, origin: BaselineOrigin | None, label: str | None
    ) -> None:
        """Never asked: nothing is benched."""

    def cancel_bench(self) -> bool:
        """No bench of its own to cancel."""
        return True

    def pause_probe(self, paused: bool) -> None:
        """Never asked: no probe of its own to pause."""


class LocalFeed:
    """The feed that samples, probes and benches from this process."""

    def __init__(
        self,
        config: MonitorConfig,
        targets: Targets,
        store: Store | None,
        *,
        wall: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        managed: Relauncher | None = None,
    ) -> None:
        """Args:
        config: The dashboard's configuration (cadences, probe, benches).
        targets: The monitored server and the optional baseline server.
        store: Where benches are saved; None fails them ("cannot be saved").
        wall: Wall clock.
        clock: Monotonic clock of the probe cadence (tests fake it, with `sleep`).
        sleep: How the probe loop waits.
        managed: The server when specmon launched it (`specmon launch`): a baseline of origin
            RELAUNCHED relaunches it without speculation, then with it.
        """
        self.config = config
        self.targets = targets
        self.store = store
        self.wall = wall
        self.protocol = bench_protocol(config)
        self.managed = managed
        self.watch = Watch(
            targets.server,
            interval=config.interval,
            gpu_metrics=config.gpu_metrics,
            prompts=config.probe_prompts,
            wall=wall,
            clock=clock,
            sleep=sleep,
        )
        self.saving = False
        """A bench is writing its snapshot: too late to cancel it, unless `save_waiting`."""
        self.save_waiting = False
        """The save waits for another process's lock: cancelling keeps the result in a file."""
        self.probe_is_paused = False
        self._sink: FeedSink | None = None
        self._followed: str | None = None
        self._follower: asyncio.Task[None] | None = None
        self._bench: asyncio.Task[None] | None = None
        self._bench_on_server = False

    @property
    def bench_running(self) -> bool:
        """Whether a bench is in progress."""
        return self._bench is not None and not self._bench.done()

    async def run(self, sink: FeedSink) -> None:
        """Sample, and probe unless `--no-probe`, until cancelled; then stop every task."""
        self._sink = sink

        def telemetry_failed(error: str) -> None:
            sink.telemetry_failed(self.wall(), error)

        tasks = [
            self._spawn(self.watch.sample(sink.sample, telemetry_failed)),
            self._spawn(asyncio.to_thread(load_client_transport)),  # for the first bench
        ]
        if self.config.probe:
            tasks.append(self._spawn(self._probe(sink)))
        self._restart_follower()
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in (*tasks, self._follower, self._bench):
                if task is not None:
                    task.cancel()
            self._sink = None

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(coro)

    async def _probe(self, sink: FeedSink) -> None:
        def paused() -> bool:
            return self.probe_is_paused or (self.bench_running and self._bench_on_server)

        await self.watch.probe(
            tokens=self.config.probe_tokens,
            every=self.config.probe_every,
            paused=paused,
            done=sink.probe_done,
            failed=sink.probe_failed,
        )

    def follow_baseline_server(self, url: str | None) -> None:
        """Sample `url` (every 2 s at most) for its restarts; None stops following."""
        if url == self._followed:
            return
        self._followed = url
        self._restart_follower()

    def _restart_follower(self) -> None:
        if self._follower is not None:
            self._follower.cancel()
            self._follower = None
        sink, url = self._sink, self._followed
        if sink is None or url is None:
            return  # `run` starts it
        watch = Watch(
            self.targets.server.at(url),
            telemetry=False,
            interval=max(self.config.interval, BASELINE_SERVER_EVERY_S),
        )
        self._follower = self._spawn(watch.sample(sink.baseline_sample, lambda _error: None))

    def pause_probe(self, paused: bool) -> None:
        """Pause or resume the probe; a bench on the watched server pauses it too."""
        self.probe_is_paused = paused

    def start_bench(
        self, kind: SnapshotKind, url: str, origin: BaselineOrigin | None, label: str | None
    ) -> None:
        """Bench `url` with the dashboard's protocol and save it; ignored while one runs."""
        sink = self._sink
        if sink is None or self.bench_running:
            return
        sink.bench_progress(BenchView(kind.value, 0, self.protocol.runs, None))
        self._bench_on_server = url == self.config.url
        self._bench = self._spawn(self._run_bench(sink, kind, url, origin, label))

    def cancel_bench(self) -> bool:
        """Cancel the bench unless it is being saved (then False: it completes); one whose save
        waits for another process's lock is kept in a file instead (`storage.saving`)."""
        if self.saving and not self.save_waiting:
            return False
        if self._bench is not None:
            self._bench.cancel()
        return True

    async def _run_bench(
        self,
        sink: FeedSink,
        kind: SnapshotKind,
        url: str,
        origin: BaselineOrigin | None,
        label: str | None,
    ) -> None:
        protocol = self.protocol
        started = time.monotonic()

        def progress(p: Progress) -> None:
            if p.phase != "run":
                return
            per_run = (time.monotonic() - started) / (p.index + protocol.warmup)
            eta = per_run * (p.total - p.index)
            sink.bench_progress(BenchView(kind.value, p.index, p.total, eta))

        watched = url == self.config.url

        def note(line: str) -> None:
            sink.bench_note(self.wall(), line)

        try:
            if origin == BaselineOrigin.RELAUNCHED and self.managed is not None:
                bench = self.managed.take_baseline(
                    protocol, on_progress=progress, say=note, wall=self.wall
                )
            else:
                bench = take_snapshot(
                    self.targets.server.at(url),
                    protocol,
                    kind=kind,
                    label=label,
                    gpu_metrics=self.config.gpu_metrics if watched else None,
                    on_progress=progress,
                    again=note,
                    wall=self.wall,
                )
            snapshot = await bench
        except SpecmonError as exc:
            self._bench_on_server = False
            sink.bench_failed(kind, str(exc))
            return
        except asyncio.CancelledError:
            self._bench_on_server = False
            sink.bench_failed(kind, BENCH_CANCELLED)
            raise
        # Off the event loop, so that the keys answer meanwhile: another process's lock is
        # waited for (Esc: the way out), and a result the store cannot take is kept in a file
        # for `specmon snapshots import` (`storage.saving`): a finished bench is never lost.
        self.saving = True

        def waiting(line: str) -> None:
            self.save_waiting = True
            note(line)

        try:
            outcome = await save_or_keep(
                self.store, Unsaved((snapshot,)), say=waiting, way_out="Esc"
            )
        finally:
            self._bench_on_server = self.saving = self.save_waiting = False
        if outcome.ids is None:
            sink.bench_failed(kind, outcome.message())
        else:
            sink.bench_done(dataclasses.replace(snapshot, id=outcome.ids[0]), kind, origin)
        if outcome.interrupted:
            raise asyncio.CancelledError
