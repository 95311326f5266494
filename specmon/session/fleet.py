"""Many servers watched at once: one `TargetSession` per server, a `Fleet` of them.

Each session is what the single-server dashboard runs, without Textual: the same `LocalFeed`
(sampler, probe loop, baseline server, benches) feeding the same `LiveState`, whose `view()` is
the one source of every figure (pooled probes, the comparison, validity). Its baseline comes
from the store, looked up again while none applies, or is taken from its baseline server when
asked (`take_baselines`); a baseline server is sampled for its restarts, as the dashboard does.
The exporter serves these sessions; `fleet_row` turns each View into one row of the fleet table.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from specmon.config import FleetTarget, MonitorConfig, Targets
from specmon.errors import SpecmonError
from specmon.measure.snapshot import SnapshotKind, default_protocol
from specmon.model import Sample, Snapshot
from specmon.session.baselines import BaselineOrigin
from specmon.session.feed import FeedSink, LocalFeed
from specmon.session.live import LiveState
from specmon.session.store_baseline import StoreBaseline
from specmon.session.view import BenchView, View
from specmon.session.watch import ProbeOutcome, Watch
from specmon.storage.store import Store
from specmon.target import Target

RETAKE_AFTER_S = 300.0
"""With `take_baselines`, a target gets at most one baseline attempt this often."""


def stale_after(config: MonitorConfig) -> float:
    """Seconds before a reading counts as stale: three sampling intervals (at least 1 s each)."""
    return 3 * max(config.interval, 1.0)


class TargetSession:
    """One server of a fleet: sampled, probed, and compared with its baseline.

    Its I/O is a `LocalFeed`, the dashboard's own (sampler, probe loop, baseline server, benches);
    the session is that feed's sink and keeps the server's `LiveState`. A dashboard that shows
    this server (`attach`) gets the bench reports instead, and handles them as for a lone server.
    """

    def __init__(
        self,
        target: FleetTarget,
        server: Target,
        config: MonitorConfig,
        store: Store | None,
        *,
        probing: bool = True,
        take_baselines: bool = False,
        wall: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Args:
        target: The server and its baseline server, as configured.
        server: How to reach it (credentials and timeouts; the baseline server shares them).
        config: Cadences, probe size, baseline age limit.
        store: Where baselines are looked up and saved; None: no stored baselines.
        probing: Run the probe loop (off when each scrape probes: `probe_now`).
        take_baselines: Take a baseline from the baseline server when none applies.
        wall: Wall clock.
        clock: Monotonic clock of the probe cadence.
        sleep: How the probe loop waits (tests fake it with `clock`).
        """
        self.target = target
        self.server = replace(server, url=target.url, metrics_urls=target.metrics_url)
        gpu_metrics = target.gpu_metrics or config.gpu_metrics
        self.config = replace(
            config,
            url=target.url,
            baseline_url=target.baseline_url,
            metrics_url=target.metrics_url,
            gpu_metrics=gpu_metrics,
            fleet=(),
        )
        self.store = store
        self.take_baselines = take_baselines
        self.wall = wall
        self.probe_protocol = default_protocol(5, 0, config.probe_tokens)
        self.live = LiveState(
            target.url,
            self.probe_protocol,
            max_age_s=config.max_age,
            probe_every=config.probe_every,
            prompts=config.probe_prompts,
        )
        self.live.probe_enabled = config.probe
        baseline = self.server.at(target.baseline_url) if target.baseline_url else None
        self.feed = LocalFeed(
            replace(self.config, probe=probing and config.probe),
            Targets(self.server, baseline),
            store,
            wall=wall,
            clock=clock,
            sleep=sleep,
        )
        self.probe_listeners: list[Callable[[ProbeOutcome], object]] = []
        """Called with every finished probe (the exporter's cycle histogram)."""
        self.probes_ok = 0
        self.probes_failed = 0
        self.last_probe_ok: bool | None = None
        self.last_probe_success_wall: float | None = None
        """Wall time the latest successful probe finished (the exporter serves it: an alert tells
        a target whose figures were withdrawn from one never measured)."""
        self.dashboard: FeedSink | None = None
        """The dashboard showing this server: it gets the bench reports (`attach`)."""
        self.store_baseline = StoreBaseline(store, self.live)
        self._tried_baseline_at: float | None = None
        self.benching: set[str] = set()
        """Baseline servers a baseline bench runs on now, shared by the fleet's sessions
        (`Fleet` sets it): several targets may share one baseline server."""
        self._benching_url: str | None = None

    @property
    def url(self) -> str:
        """The server's URL."""
        return self.target.url

    @property
    def watch(self) -> Watch:
        """The server's connection, sampler and probe loop."""
        return self.feed.watch

    async def run(self) -> None:
        """Sample (and probe, unless scrapes do) and follow the baseline server, until
        cancelled."""
        self.follow_baseline_server()
        await self.feed.run(self)

    def attach(self, dashboard: FeedSink | None) -> None:
        """A dashboard shows this server from now on (None: none does)."""
        self.dashboard = dashboard

    def view(self) -> View:
        """The dashboard's View of this server now."""
        return self.live.view(self.wall(), stale_after(self.config))

    # The feed's sink.

    def sample(self, sample: Sample) -> None:
        """A tick of the server's sampler: its state, then its baseline."""
        self.live.on_sample(sample)
        if self.live.server.info is not None:
            self._find_baseline(sample.t)

    def baseline_sample(self, sample: Sample) -> None:
        """A tick of the baseline server's sampler."""
        self.live.on_baseline_sample(sample)

    def probe_done(self, outcome: ProbeOutcome) -> None:
        """A probe finished."""
        self.live.on_probe(
            outcome.wall, outcome.t, outcome.figures, outcome.result, outcome.category
        )
        self.probes_ok += 1
        self.last_probe_ok = True
        self.last_probe_success_wall = outcome.wall
        for listener in self.probe_listeners:
            listener(outcome)

    def probe_failed(self, wall: float, error: str) -> None:
        """A probe failed (or telemetry could not be set up: then nothing is counted)."""
        if error.startswith("GPU telemetry: "):
            self.live.log(wall, "warn", error)
            return
        self.live.on_probe_error(wall, error)
        self.probes_failed += 1
        self.last_probe_ok = False

    def probe_paused(self, paused: bool) -> None:
        """Only a shared feed reports this; a session's feed is its own."""

    def bench_progress(self, progress: BenchView) -> None:
        """A bench started or ran one more run."""
        if self.dashboard is not None:
            self.dashboard.bench_progress(progress)
        else:
            self.live.bench = progress

    def bench_done(
        self, snapshot: Snapshot, kind: SnapshotKind, origin: BaselineOrigin | None
    ) -> None:
        """A bench completed and was saved."""
        self._bench_ended()
        if self.dashboard is not None:
            self.dashboard.bench_done(snapshot, kind, origin)
            return
        self.live.bench = None
        if kind == SnapshotKind.BASELINE and origin is not None:
            self.live.set_baseline(self.wall(), snapshot, origin)
            self.follow_baseline_server()

    def bench_failed(self, kind: SnapshotKind, error: str) -> None:
        """A bench failed: nothing was saved."""
        self._bench_ended()
        if self.dashboard is not None:
            self.dashboard.bench_failed(kind, error)
            return
        self.live.bench = None
        self.live.log(self.wall(), "error", f"{kind.value} failed: {error}")

    def bench_note(self, wall: float, note: str) -> None:
        """A running bench said a line."""
        if self.dashboard is not None:
            self.dashboard.bench_note(wall, note)
            return
        self.live.log(wall, "info", note)

    async def probe_now(self, connect_timeout: float) -> None:
        """Probe once now (each scrape of `/probe?target=…`), its outcome recorded as any.

        Args:
            connect_timeout: How long to wait for a session just started to connect.
        """
        try:
            await asyncio.wait_for(self.watch.connected.wait(), connect_timeout)
            outcome = await self.watch.probe_once(self.config.probe_tokens)
        except TimeoutError:
            self.probe_failed(
                self.wall(), f"{self.url}: no connection within {connect_timeout:g} s"
            )
        except SpecmonError as exc:
            self.probe_failed(self.wall(), str(exc))
        else:
            self.probe_done(outcome)

    def _find_baseline(self, t: float) -> None:
        """Look a baseline up in the store (`StoreBaseline`: the dashboard's rule); take one
        from the baseline server when asked to and the store has none that applies."""
        lookup = self.store_baseline.update(t, self.wall())
        if lookup is None:
            return
        if lookup.baseline is not None:
            self.follow_baseline_server()
        info = self.live.server.info
        validity = self.live.baseline.validity(info, self.wall())
        if validity is not None and validity.valid:
            return
        tried = self._tried_baseline_at
        recently = tried is not None and t - tried < RETAKE_AFTER_S
        if self.take_baselines and self.target.baseline_url and not recently:
            if self.target.baseline_url in self.benching:
                # Another target's baseline bench runs on the same server: two at once would
                # each measure the other's load. Its baseline is looked up at the next tick.
                self.store_baseline.again()
                return
            self._tried_baseline_at = t
            self.start_baseline()

    def start_baseline(self) -> None:
        """Take a baseline from the target's baseline server in the background (saved)."""
        url = self.target.baseline_url
        if url is None or self.live.bench is not None:
            return
        self.benching.add(url)
        self._benching_url = url
        self.feed.start_bench(SnapshotKind.BASELINE, url, BaselineOrigin.BASELINE_SERVER, None)

    def _bench_ended(self) -> None:
        if self._benching_url is not None:
            self.benching.discard(self._benching_url)
            self._benching_url = None

    def follow_baseline_server(self) -> None:
        """Sample the baseline's server when it is another one (for its restarts); again after
        a new baseline names another server."""
        url = self.live.baseline.server_url or self.target.baseline_url
        if url == self.url:
            url = None
        if url != self.live.baseline.followed:
            self.live.baseline.follow(url)
        self.feed.follow_baseline_server(url)


class Fleet:
    """Every target's session; run them together."""

    def __init__(self, sessions: Sequence[TargetSession]) -> None:
        self.sessions = list(sessions)
        self._group: asyncio.TaskGroup | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._benching: set[str] = set()
        for session in self.sessions:
            session.benching = self._benching

    def get(self, url: str) -> TargetSession | None:
        """The session of a target, by URL."""
        return next((s for s in self.sessions if s.url == url), None)

    async def run(self) -> None:
        """Run every session until cancelled; a session added later is started by `add`."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for session in self.sessions:
                    self._start(session)
                await asyncio.Event().wait()  # until cancelled: the sessions with it
        finally:
            self._group = None
            self._tasks.clear()

    def _start(self, session: TargetSession) -> None:
        if self._group is not None:
            task = self._group.create_task(session.run(), name=f"target-{session.url}")
            self._tasks[session.url] = task

    def add(self, session: TargetSession) -> None:
        """Watch one more target (the exporter's `/probe?target=…` of a new one)."""
        session.benching = self._benching
        self.sessions.append(session)
        self._start(session)

    def remove(self, url: str) -> None:
        """Stop watching a target (one the exporter added, no longer scraped)."""
        self.sessions = [s for s in self.sessions if s.url != url]
        task = self._tasks.pop(url, None)
        if task is not None:
            task.cancel()  # a TaskGroup lets one of its tasks be cancelled alone
