"""One watched server's headless session: the sink of its feed, the owner of its state, the
maker of every baseline decision, the source of its View.

The single dashboard, each server of a fleet, the exporter, `--once` and a replay all run this
one class, and `check` too, fed its one reading of the server (`check.session.CheckSession`): a
sample goes from the feed into `LiveState` here, the store's baseline is looked up here
(`StoreBaseline`), a baseline waited for or asked for is started here, and the View built here
goes to whoever shows it (`on_view`). A screen only renders the Views it is handed, and
asks the session to act on its keys (`start_bench`, `take_baseline`, `wait_for_plain`).

The command builds the session (`dashboard_session` for the dashboard that samples the server
itself, `of_config` over another feed, `of_target` for a fleet's server) and hands it to what
runs it. What happens to the session itself it says in its own events log: a recording that
stopped early, the lasting history's store errors and drift findings.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Self

from specmon.analysis.ab_runs import StoredAb
from specmon.analysis.baseline_rule import Pin
from specmon.analysis.pooled import Pooled
from specmon.analysis.validity import LifetimeCheck, LifetimeState
from specmon.config import FleetTarget, MonitorConfig, Targets
from specmon.errors import SpecmonError
from specmon.measure.snapshot import SnapshotKind, default_protocol
from specmon.model import Protocol, Sample, ServerInfo, Snapshot
from specmon.session.ab_lookup import lookup_ab
from specmon.session.baselines import (
    NOT_CHECKED,
    BaselineLookup,
    BaselineOrigin,
    check_lifetimes,
    lookup_baseline,
)
from specmon.session.feed import BENCH_CANCELLED, Feed, LocalFeed, Relauncher, bench_protocol
from specmon.session.history_writer import HistoryRecorder, start_history
from specmon.session.history_zoom import Zoomed, ZoomLevel
from specmon.session.live import LiveState
from specmon.session.recorder import RecordingFeed, recorded_lookups
from specmon.session.recording import RecordingWriter
from specmon.session.store_baseline import Lookup, StoreBaseline
from specmon.session.verdict_watch import VerdictWatch
from specmon.session.view import BenchView, Level, View
from specmon.session.watch import ProbeOutcome, Watch
from specmon.session.zoom_reader import read_zoom
from specmon.storage.store import Store, StoreError
from specmon.target import Target

RETAKE_AFTER_S = 300.0
"""With `take_baselines`, a server gets at most one baseline attempt this often."""


def stale_after(config: MonitorConfig) -> float:
    """Seconds before a reading counts as stale: three sampling intervals (at least 1 s each)."""
    return 3 * max(config.interval, 1.0)


class ServerSession:
    """One watched server: its feed's sink, its `LiveState`, its baseline decisions, its View."""

    def __init__(
        self,
        target: FleetTarget,
        config: MonitorConfig,
        feed: Feed,
        store: Store | None,
        *,
        lookup: Lookup | None = None,
        take_baselines: bool = False,
        auto_baseline: bool = False,
        store_note: str = "",
        relaunches: bool = False,
        replay: bool = False,
        recording: RecordingWriter | None = None,
        records_history: bool = False,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """Args:
        target: The server and its baseline server, as configured.
        config: Its settings (`url` and `baseline_url` are the target's).
        feed: Where its samples, probes and benches come from.
        store: Where baselines are looked up; None (and no `lookup`): none is.
        lookup: How the store is asked, when not by `lookup_baseline` on `store`: answered
            from a recording (`specmon replay`).
        take_baselines: Take a baseline from the baseline server when none applies (the
            exporter's `--take-baselines`).
        auto_baseline: Take a baseline as soon as the server is known and the store has none
            (the demo).
        store_note: Said with every snapshot saved: the demo's, that its store is gone on exit.
        relaunches: The server is one specmon launched (`specmon launch`): its baseline is
            taken by relaunching it without speculation (the feed's `Relauncher`).
        replay: The inputs are a recording's: the View's top line says so.
        recording: Where to record every input from `feed`, and the store's answers to its
            baseline lookups (`--record`); a recording that stops early says why in the events
            log (`recording_stopped`).
        records_history: Keep the server's lasting history in `store` while the session runs
            (`run`, until `close`): the dashboard of the process that samples the server.
        wall: Wall clock.
        """
        if lookup is None and store is not None:
            lookup = partial(self._store_lookup, store)
        if recording is not None:
            feed = RecordingFeed(feed, recording, self.recording_stopped)
            if lookup is not None and store is not None:
                lookup = recorded_lookups(recording, lookup, wall=wall)
        self.target = target
        self.config = config
        self.feed = feed
        self.store = store
        self.recording = recording
        """Where every input is recorded (`--record`), or None."""
        self.records_history = records_history and store is not None
        self.take_baselines = take_baselines
        self.auto_baseline = auto_baseline
        self.store_note = store_note
        self.relaunches = relaunches
        self.replay = replay
        self.wall = wall
        self.probe_protocol = default_protocol(5, 0, config.probe_tokens)
        self.bench_protocol = bench_protocol(config)
        self._lookup = lookup
        self.live = self._new_live_state()
        self.store_baseline = StoreBaseline(store, self.live, lookup=lookup)
        self.on_view: Callable[[View], object] | None = None
        """Handed the View after every input (a screen showing this server); None: nobody
        shows it now, and no View is built."""
        self.history: HistoryRecorder | None = None
        """Records samples and probes in the store's lasting history, when it is on."""
        self.probe_listeners: list[Callable[[ProbeOutcome], object]] = []
        """Called with every finished probe (the exporter's cycle histogram)."""
        self.probes_ok = 0
        self.probes_failed = 0
        self.last_probe_ok: bool | None = None
        self.last_probe_success_wall: float | None = None
        """Wall time the latest successful probe finished (the exporter serves it: an alert tells
        a target whose figures were withdrawn from one never measured)."""
        self._tried_baseline_at: float | None = None
        self.benching: set[str] = set()
        """Baseline servers a baseline bench runs on now, shared by a fleet's sessions (`Fleet`
        sets it): several targets may share one baseline server."""
        self._benching_url: str | None = None
        self._verdicts = VerdictWatch()
        self.verdict_changes = 0
        """How many times the verdict changed (`view`): a screen rings at each new one."""
        self._choice: BaselineLookup | None = None
        self._confirmed_id: int | None = None
        """The baseline whose server's reading last confirmed its lifetime
        (`_lifetime_confirmed`)."""

    @classmethod
    def of_target(
        cls,
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
    ) -> Self:
        """A fleet's server, sampled and probed from this process (`LocalFeed`).

        Args:
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
        server = replace(server, url=target.url, metrics_urls=target.metrics_url)
        config = replace(
            config,
            url=target.url,
            baseline_url=target.baseline_url,
            metrics_url=target.metrics_url,
            gpu_metrics=target.gpu_metrics or config.gpu_metrics,
            fleet=(),
        )
        baseline = server.at(target.baseline_url) if target.baseline_url else None
        feed = LocalFeed(
            replace(config, probe=probing and config.probe),
            Targets(server, baseline),
            store,
            wall=wall,
            clock=clock,
            sleep=sleep,
        )
        return cls(target, config, feed, store, take_baselines=take_baselines, wall=wall)

    @classmethod
    def of_config(
        cls, config: MonitorConfig, feed: Feed, store: Store | None, **options: Any
    ) -> Self:
        """A lone server's session, its target the configuration's (`url`, `baseline_url`): the
        dashboard's (`dashboard_session`), a `specmon web` tab's over the hub's feed, a replay's.

        Args:
            config: The merged configuration.
            feed: Where its samples, probes and benches come from.
            store: The snapshot store; None: no stored baselines.
            options: As the constructor's (`wall`, `replay`, …).
        """
        return cls(FleetTarget(config.url, config.baseline_url), config, feed, store, **options)

    def _new_live_state(self) -> LiveState:
        live = LiveState(
            self.config.url,
            self.probe_protocol,
            max_age_s=self.config.max_age,
            probe_every=self.config.probe_every,
            prompts=self.config.probe_prompts,
        )
        live.probe_enabled = self.config.probe
        live.replay = self.replay
        return live

    def rewind(self) -> None:
        """Forget every input: the state is as `run` left it before the first (a replay seeking
        back)."""
        self.live = self._new_live_state()
        self.store_baseline = StoreBaseline(self.store, self.live, lookup=self._lookup)
        self._choice = None
        self._confirmed_id = None
        self._verdicts = VerdictWatch()
        self.follow_baseline_server()

    def _store_lookup(self, store: Store, info: ServerInfo, protocol: Protocol) -> BaselineLookup:
        """The store's baseline for this server by the one rule (`lookup_baseline`): pinned to
        the baseline server when one is named, preferring those whose servers the session saw
        keep their lifetime."""
        baseline_url = self.target.baseline_url
        return lookup_baseline(
            store,
            info,
            protocol,
            pin=Pin(url=baseline_url) if baseline_url else None,
            lifetime=lambda snapshot: self.live.baseline.known_lifetime(snapshot, info),
            now=self.wall(),
            max_age_s=self.config.max_age,
        )

    async def stored_lifetimes(self, baselines: Sequence[Snapshot]) -> dict[int, LifetimeCheck]:
        """The lifetimes of stored baselines' servers, for the `c` screen: each server read
        now, as `snapshots export` reads them, where this session reads its server itself;
        else (another process's feed, a replay) what the session knows of them."""
        if isinstance(self.feed, LocalFeed) and not self.replay:
            return dict(await check_lifetimes(baselines, self.feed.targets.server))
        info = self.live.server.info
        return {
            b.id: self.live.baseline.known_lifetime(b, info) if info else NOT_CHECKED
            for b in baselines
            if b.id is not None
        }

    @property
    def url(self) -> str:
        """The server's URL."""
        return self.target.url

    @property
    def watch(self) -> Watch:
        """The server's connection, sampler and probe loop (a `LocalFeed`'s)."""
        assert isinstance(self.feed, LocalFeed)
        return self.feed.watch

    async def run(self) -> None:
        """Run the feed into this session and follow the baseline server, until cancelled; with
        `records_history`, keep the lasting history from now on (until `close`)."""
        self.follow_baseline_server()
        if self.records_history and self.history is None:
            self._start_history(asyncio.get_running_loop())
        await self.feed.run(self)

    def _start_history(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the history writer; what it says (from its own thread) is logged on `loop`."""
        assert self.store is not None  # `records_history` is off without one

        def say(level: Level, text: str) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody shows it now
                loop.call_soon_threadsafe(self.log, self.wall(), level, text)

        self.history = start_history(self.store.path, self.live, self.config, self.wall(), say)

    def close(self) -> None:
        """Stop keeping the lasting history: what the writer holds is written (quitting)."""
        if self.history is not None:
            self.history.writer.close()

    def view(self) -> View:
        """The server's View now; a verdict that changed since the last View is said in the
        events log (`VerdictWatch`, counted in `verdict_changes`)."""
        view = self.live.view(self.wall(), stale_after(self.config))
        changed = self._verdicts.see(view)
        if changed is None:
            return view
        self.live.log(self.wall(), "warn", changed)
        self.verdict_changes += 1
        return replace(view, events=(*view.events, self.live.events[-1]))

    def emit(self) -> None:
        """Hand the View to whoever shows this server (`on_view`)."""
        if self.on_view is not None:
            self.on_view(self.view())

    def log(self, wall: float, level: Level, text: str, *, show: bool = True) -> None:
        """Say a line in the events log, and show it (not with `show` off: the caller shows
        the View itself, or none is shown yet)."""
        self.live.log(wall, level, text)
        if show:
            self.emit()

    # What a surface reads of the session, beside its View.

    @property
    def server_info(self) -> ServerInfo | None:
        """What the server said of itself, once it answered."""
        return self.live.server.info

    @property
    def baseline_choice(self) -> BaselineLookup | None:
        """The store's latest answer for this server (`StoreBaseline`): the baseline the rule
        chose and why, or why none applies; None before the first lookup."""
        return self._choice

    @property
    def bench_running(self) -> bool:
        """Whether a bench is in progress (under `specmon web`, maybe another tab's)."""
        return self.live.bench is not None

    @property
    def probe_is_paused(self) -> bool:
        """Whether the probe is paused (`p`, here or in another tab sharing the feed)."""
        return self.live.probe_paused

    @property
    def waiting_for_plain_server(self) -> bool:
        """Whether a baseline waits for the server to come back without speculation."""
        return self.live.baseline.waiting

    @property
    def keeps_snapshots(self) -> bool:
        """Whether the session has a snapshot store (baselines saved, history to zoom into)."""
        return self.store is not None

    def recent(self) -> Pooled:
        """The recent probes pooled: "now" in the comparison (the exporter serves it)."""
        return self.live.recent()

    def known_lifetimes(self) -> dict[int, LifetimeCheck]:
        """The lifetime of the baseline's server as the session saw it, by the baseline's id
        (the `c` screen's rows before the stored baselines' servers are read)."""
        baseline = self.live.baseline.snapshot
        if baseline is None or baseline.id is None:
            return {}
        return {baseline.id: self.live.baseline.lifetime(self.live.server.info)}

    def stored_snapshots(self) -> list[Snapshot]:
        """Every snapshot in the store (the `c` screen's rows and their baselines); none
        without a store.

        Raises:
            StoreError: The store could not be read.
        """
        return self.store.list() if self.store is not None else []

    def what_if_inputs(self, wall: float) -> tuple[list[Snapshot], StoredAb | None]:
        """What the `w` screen reads from the store beside the session's state: the earlier
        snapshots and the latest A/B of this configuration (`lookup_ab`); a store that cannot
        be read is said in the events log (at `wall`) and read as holding none."""
        info = self.live.server.info
        if self.store is None:
            return [], None
        try:
            earlier = self.store.list()
            ab = lookup_ab(self.store, info, max_age_s=self.config.max_age) if info else None
        except SpecmonError as exc:
            self.log(wall, "warn", f"what-if without earlier snapshots: {exc}", show=False)
            return [], None
        return earlier, ab

    async def read_zoom(self, level: ZoomLevel, now: float) -> Zoomed:
        """Read `level`'s span of the server's lasting history from the store, on a thread of
        its own (with its own connection), off the event loop.

        Raises:
            StoreError: The store cannot be read (or there is none).
        """
        if self.store is None:
            raise StoreError("no snapshot store: no history to zoom into")
        return await asyncio.to_thread(read_zoom, self.store.path, self.url, level, now)

    def show_zoomed(self, zoomed: Zoomed | None) -> None:
        """Show a span of the lasting history in the sparklines, or (None) the live minutes."""
        self.live.zoomed = zoomed

    # The feed's sink.

    def sample(self, sample: Sample) -> None:
        """A tick of the server's sampler: its state, its history, then its baseline."""
        changes = self.live.on_sample(sample)
        if self.history is not None:
            self.history.on_sample(sample, changes)
        info = self.live.server.info
        if info is not None:
            self._find_baseline(sample.t)
            if self.live.baseline.waiting and info.speculative is None:
                self._take_waited_baseline()
        self.emit()

    def baseline_sample(self, sample: Sample) -> None:
        """A tick of the baseline server's sampler."""
        self.live.on_baseline_sample(sample)
        if self._lifetime_confirmed():
            # Looked up before its server was read, the baseline was ranked as unverified: the
            # rule's words (the `i` screen, `--once`) are redone as `check`'s, which reads the
            # candidates' servers first. The confirmed one still ranks first.
            self.store_baseline.again()
            self._find_baseline(sample.t)
        self.emit()

    def _lifetime_confirmed(self) -> bool:
        """Whether this reading of the store's baseline's server confirmed its lifetime (the
        process it measured), for the first time: what the rule ranks baselines by."""
        current, info = self.live.baseline.snapshot, self.live.server.info
        if current is None or info is None or current.id == self._confirmed_id:
            return False
        if self._choice is None or self._choice.baseline is None:
            return False  # not the store's: taken here, or none chosen
        if self.live.baseline.lifetime(info).state is not LifetimeState.SAME:
            return False
        self._confirmed_id = current.id
        return self._choice.baseline.id == current.id

    def probe_done(self, outcome: ProbeOutcome) -> None:
        """A probe finished."""
        self.live.on_probe(
            outcome.wall, outcome.t, outcome.figures, outcome.result, outcome.category
        )
        if self.history is not None:
            self.history.on_probe(outcome.wall, outcome.figures)
        self.probes_ok += 1
        self.last_probe_ok = True
        self.last_probe_success_wall = outcome.wall
        for listener in self.probe_listeners:
            listener(outcome)
        self.emit()

    def probe_failed(self, wall: float, error: str) -> None:
        """A probe failed."""
        self.live.on_probe_error(wall, error)
        self.probes_failed += 1
        self.last_probe_ok = False
        self.emit()

    def telemetry_failed(self, wall: float, error: str) -> None:
        """GPU and host telemetry could not be set up: a warning, not a failed probe."""
        self.log(wall, "warn", error)

    def recording_stopped(self, why: str) -> None:
        """The recording of the inputs (`recording`) stopped early: its size cap, a failed
        write. Said in the events log; the session goes on."""
        self.log(self.wall(), "warn", f"recording stopped: {why}")

    def probe_paused(self, paused: bool) -> None:
        """The probe was paused or resumed (`p`, here or in another tab sharing the feed)."""
        if paused != self.live.probe_paused:
            self.live.probe_paused = paused
            self.log(self.wall(), "info", "probe " + ("paused" if paused else "resumed"))

    def bench_progress(self, progress: BenchView) -> None:
        """A bench started or ran one more run."""
        self.live.bench = progress
        self.emit()

    def bench_done(
        self, snapshot: Snapshot, kind: SnapshotKind, origin: BaselineOrigin | None
    ) -> None:
        """A bench completed and was saved: a baseline becomes the server's."""
        self._bench_ended()
        self.live.bench = None
        wall = self.wall()
        if kind == SnapshotKind.BASELINE and origin is not None:
            self.live.set_baseline(wall, snapshot, origin)
            self.follow_baseline_server()
            if origin == BaselineOrigin.RELAUNCHED:
                self.live.log(wall, "info", "baseline taken; the speculative server is back")
            elif origin == BaselineOrigin.THIS_SERVER:
                self.live.log(
                    wall,
                    "warn",
                    "baseline taken: now restart the server WITH "
                    "speculation; the comparison follows",
                )
        else:
            notes = "; ".join(filter(None, (snapshot.label, self.store_note)))
            self.live.log(
                wall, "info", f"snapshot #{snapshot.id} saved" + (f" ({notes})" if notes else "")
            )
        self.emit()

    def bench_failed(self, kind: SnapshotKind, error: str) -> None:
        """A bench failed: nothing was saved."""
        self._bench_ended()
        self.live.bench = None
        if error == BENCH_CANCELLED:  # Esc: the user's choice, not a failure
            self.log(self.wall(), "info", f"{kind.value} {error}")
            return
        self.log(self.wall(), "error", f"{kind.value} failed: {error}")

    def bench_note(self, wall: float, note: str) -> None:
        """A running bench said a line."""
        self.log(wall, "info", note)

    # What a screen's keys ask of the session.

    def pause_probe(self, paused: bool) -> None:
        """Pause or resume the probe (`p`)."""
        self.probe_paused(paused)
        self.feed.pause_probe(paused)

    def start_bench(
        self,
        kind: SnapshotKind,
        url: str,
        origin: BaselineOrigin | None = None,
        label: str | None = None,
    ) -> None:
        """Bench `url` and save the snapshot (a baseline of `origin`, or a run `label`led)."""
        self.live.bench = BenchView(kind.value, 0, self.bench_protocol.runs, None)
        self.feed.start_bench(kind, url, origin, label)
        self.emit()

    def cancel_bench(self) -> bool:
        """Stop waiting for a plain server, and cancel the bench in progress; False when it is
        too late (it is being saved)."""
        if self.live.baseline.waiting:
            self.live.baseline.waiting = False
            self.live.log(self.wall(), "info", "stopped waiting for a baseline")
        cancelled = self.live.bench is None or self.feed.cancel_bench()
        self.emit()
        return cancelled

    def baseline_origin(self) -> BaselineOrigin | None:
        """Where a baseline asked for now (`b`) comes from: the baseline server, a relaunch of
        the server specmon launched, or the server itself when it runs without speculation;
        None while that cannot be told (no server info yet) or is the user's to choose (the
        server runs with speculation: wait for it to come back without, `wait_for_plain`)."""
        if self.config.baseline_url is not None:
            return BaselineOrigin.BASELINE_SERVER
        if self.relaunches:
            return BaselineOrigin.RELAUNCHED
        info = self.live.server.info
        if info is not None and info.speculative is None:
            return BaselineOrigin.THIS_SERVER
        return None

    def take_baseline(self, origin: BaselineOrigin) -> None:
        """Bench a baseline of `origin` (`baseline_origin`) and make it the server's."""
        url = self.config.baseline_url if origin == BaselineOrigin.BASELINE_SERVER else None
        self.start_bench(SnapshotKind.BASELINE, url or self.config.url, origin)

    def wait_for_plain(self) -> None:
        """Take the baseline once the server comes back without speculation."""
        self.live.baseline.waiting = True
        self.log(self.wall(), "info", "waiting for the server to restart without speculation")

    def _take_waited_baseline(self) -> None:
        if self.live.bench is not None:
            return
        self.live.baseline.waiting = False
        self.live.log(
            self.wall(), "info", "the server is back without speculation: taking the baseline"
        )
        self.take_baseline(BaselineOrigin.THIS_SERVER)

    def _find_baseline(self, t: float) -> None:
        """Look a baseline up in the store when due (`StoreBaseline`); with `auto_baseline`,
        take one at once when it has none; with `take_baselines`, take one from the baseline
        server when none applies."""
        lookup = self.store_baseline.update(t, self.wall(), say=not self.auto_baseline)
        if lookup is None:
            return
        self._choice = lookup
        if lookup.baseline is not None:
            self.follow_baseline_server()
        elif self.auto_baseline and self.live.baseline.snapshot is None:
            self.auto_baseline = False
            origin = self.baseline_origin()
            if origin is not None:
                self.take_baseline(origin)
            return
        validity = self.live.baseline.validity(self.live.server.info, self.wall())
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
        self.start_bench(SnapshotKind.BASELINE, url, BaselineOrigin.BASELINE_SERVER)

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
        if url == self.live.baseline.followed:
            return
        self.live.baseline.follow(url)
        self.feed.follow_baseline_server(url)

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


def dashboard_session(
    config: MonitorConfig,
    targets: Targets,
    store: Store | None,
    *,
    managed: Relauncher | None = None,
    recording: RecordingWriter | None = None,
    auto_baseline: bool = False,
    store_note: str = "",
    wall: Callable[[], float] = time.time,
) -> ServerSession:
    """The single dashboard's server, sampled and probed from this process (`LocalFeed`), its
    lasting history kept in the store when `config.history` is on (this process samples it).

    Args:
        config: The merged configuration.
        targets: The monitored server and the optional baseline server.
        store: The snapshot store; None runs without saving (and without history).
        managed: The server when specmon launched it (`specmon launch`).
        recording: Where to record every input, the store's answers included (`--record`).
        auto_baseline: Take a baseline as soon as the server is known (the demo).
        store_note: Said with every snapshot saved.
        wall: Wall clock.
    """
    return ServerSession.of_config(
        config,
        LocalFeed(config, targets, store, wall=wall, managed=managed),
        store,
        recording=recording,
        records_history=config.history,
        auto_baseline=auto_baseline,
        store_note=store_note,
        relaunches=managed is not None,
        wall=wall,
    )
