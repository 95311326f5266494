"""The dashboard's state: it takes samples, probe runs and baselines, and says in its events log
what changed; `live_view` (session/live_view.py) builds the View from it.

No I/O and no clock: every time comes with the sample or call that brings it. Every figure
comes from `analysis` (pooled runs, the comparison, validity), the same functions `check`,
`snapshots compare` and the exports use.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from specmon.analysis.acceptance import draft_length
from specmon.analysis.conditions import company_change
from specmon.analysis.figures import run_step_cycles
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.representative import TrafficGap, traffic_gap
from specmon.analysis.validity import LifetimeState
from specmon.model import (
    GpuState,
    ProbeResult,
    Protocol,
    RunFigures,
    Sample,
    Snapshot,
    SourceName,
)
from specmon.probe_prompts import DEFAULT_CATEGORY, DEFAULT_SET, ProbePrompt, category_protocols
from specmon.session.baseline_state import BaselineState, scraped_at
from specmon.session.baselines import BaselineOrigin
from specmon.session.category_baselines import CategoryBaselines
from specmon.session.gpu_tracker import GpuTracker
from specmon.session.history_zoom import Zoomed
from specmon.session.live_view import live_view
from specmon.session.tracker import Change, ServerTracker
from specmon.session.view import (
    RECENT_PROBES,
    BenchView,
    Event,
    Level,
    View,
)
from specmon.session.window import HISTORY_S, HISTORY_STEP_S, MEAN_SPAN_S, RATE_SPAN_S
from specmon.wording import (
    TAKE_BASELINE,
)

MAX_EVENTS = 200


@dataclass(frozen=True, slots=True)
class ProbeRun:
    """One live probe: when it finished (wall and monotonic) and its figures."""

    wall: float
    t: float
    figures: RunFigures
    result: ProbeResult
    step_cycles: tuple[float, ...]
    """Every verify step's cycle in ms (`run_step_cycles`): the pooled p50/p95's steps."""
    category: str = DEFAULT_CATEGORY
    """The category of the prompt it sent (`specmon.probe_prompts`)."""


class LiveState:
    """Everything known of a watched server, fed by its session (`ServerSession`); `view()`
    renders it (`live_view`)."""

    def __init__(
        self,
        url: str,
        protocol: Protocol,
        *,
        max_age_s: float,
        probe_every: float,
        prompts: Sequence[ProbePrompt] = DEFAULT_SET,
    ):
        self.url = url
        self.protocol = protocol
        self.probe_every = probe_every
        self.server = ServerTracker("server")
        self.baseline = BaselineState(url, protocol, max_age_s=max_age_s)
        self.category_baselines = CategoryBaselines(
            category_protocols(protocol, prompts), max_age_s=max_age_s
        )
        """A baseline per category of the probe's prompts (`StoreBaseline` looks them up)."""
        self.sample: Sample | None = None
        self.history: deque[tuple[int, float, int]] = deque()
        """(step index, sum of rates, their count): one sparkline point per HISTORY_STEP_S."""
        self.probes: deque[ProbeRun] = deque(maxlen=RECENT_PROBES)
        self.by_category: dict[str, deque[RunFigures]] = {}
        """The recent probes of each category (as many as `probes` holds), in the order the
        categories first came."""
        self.gap_named = False
        """The events log said the probe is not representative of the traffic."""
        self._said_one_prompt: int | None = None
        """The baseline the events log said was benched with one prompt, beside a probe that
        rotates categories (`_say_if_baseline_lacks_categories`)."""
        self.accept_history: deque[tuple[float, float]] = deque()
        self.probe_error: str | None = None
        self.probe_paused = False
        self.probe_enabled = True
        self.replay = False
        """The inputs are a recording's (`specmon replay`): the top line says so."""
        self.bench: BenchView | None = None
        self.events: deque[Event] = deque(maxlen=MAX_EVENTS)
        self.gpus = GpuTracker()
        self._said_restarted = False
        """The events log said the baseline's server restarted (`_say_if_baseline_restarted`)."""
        self._beside: int | None = None
        """The other requests beside the last probe whose load was read (the events log says
        when it changes: `analysis.conditions.company_change`)."""
        self.why_no_baseline: str | None = None
        """Why the store has no baseline for this server (`no_baseline`); None: not asked."""
        self.zoomed: Zoomed | None = None
        """The span of the history the sparklines show (`z`); None: the live 5 minutes."""

    def log(self, wall: float, level: Level, text: str) -> None:
        """Add an event."""
        self.events.append(Event(wall, level, text))

    def _log_changes(self, wall: float, changes: list[Change]) -> None:
        for change in changes:
            self.log(wall, change.level, change.text)

    def on_sample(self, sample: Sample) -> list[Change]:
        """A tick of the monitored server's sampler; returns what changed in the server's
        lifetime (the history marks its restarts)."""
        self.sample = sample
        changes = self.server.update(sample)
        self._log_changes(sample.wall, changes)
        if any(c.restart for c in changes):
            self.probes.clear()  # runs of another lifetime are not this server's speed
            self.accept_history.clear()
        self.gpus.update(sample)
        self.baseline.watched_current = self.server.info_current
        if self.baseline.snapshot is not None and self.baseline.server_url is None:
            self.baseline.observe(
                self.server.info,
                self.server.window.latest,
                self.server.started_at,
                scraped_at=scraped_at(sample),
                error=sample.error(SourceName.INFO),
            )
        self._say_if_baseline_restarted(sample.wall)
        rate = self.server.window.decode_tok_s(RATE_SPAN_S)
        step = int(sample.t // HISTORY_STEP_S)
        if rate is not None:
            if self.history and self.history[-1][0] == step:
                _, total, count = self.history.pop()
                self.history.append((step, total + rate.value, count + 1))
            else:
                self.history.append((step, rate.value, 1))
        while self.history and self.history[0][0] <= step - HISTORY_S / HISTORY_STEP_S:
            self.history.popleft()
        return changes

    def on_baseline_sample(self, sample: Sample) -> None:
        """A tick of the baseline server's sampler (when it is another server)."""
        self._log_changes(sample.wall, self.baseline.on_server_sample(sample))
        self._say_if_baseline_restarted(sample.wall)

    def _say_if_baseline_restarted(self, wall: float) -> None:
        """Say once in the events log that the baseline's server restarted, when the decision
        the panel and the exporter show (`BaselineState.lifetime`) turns to it."""
        if self.baseline.snapshot is None:
            return
        check = self.baseline.lifetime(self.server.info)
        restarted = check.state == LifetimeState.RESTARTED
        if restarted and not self._said_restarted:
            self.log(
                wall, "error", f"the baseline no longer applies: {check.detail}; {TAKE_BASELINE}"
            )
        self._said_restarted = restarted

    def on_probe(
        self,
        wall: float,
        t: float,
        figures: RunFigures,
        result: ProbeResult,
        category: str = DEFAULT_CATEGORY,
    ) -> None:
        """A live probe of a prompt of `category` finished."""
        cycles = tuple(run_step_cycles(result))
        self.probes.append(ProbeRun(wall, t, figures, result, cycles, category))
        self.by_category.setdefault(category, deque(maxlen=RECENT_PROBES)).append(figures)
        self._say_if_gap_changed(wall)
        self._say_if_baseline_lacks_categories(wall)
        others = figures.conditions.others_running if figures.conditions else None
        if (company := company_change(self._beside, others)) is not None:
            self.log(wall, "warn" if others else "info", company)
        self._beside = others if others is not None else self._beside
        if figures.accept_length is not None:
            self.accept_history.append((t, figures.accept_length))
        while self.accept_history and self.accept_history[0][0] < t - HISTORY_S:
            self.accept_history.popleft()
        if self.probe_error is not None:
            self.log(wall, "info", "probe recovered")
        self.probe_error = None

    def traffic_gap(self) -> TrafficGap | None:
        """The recent probes' accept length beside the server's over all its requests in about
        the same window (its counters)."""
        info = self.server.info
        if info is None or info.speculative is None:
            return None
        window = self.server.window.accept_length(MEAN_SPAN_S)
        return traffic_gap(self.recent(), window, draft_length=draft_length(info))

    def _say_if_gap_changed(self, wall: float) -> None:
        """Log when the probe stops (or starts again) being representative of the traffic."""
        gap = self.traffic_gap()
        if gap is None:
            return
        if gap.named and not self.gap_named:
            self.log(wall, "warn", gap.sentence)
        elif self.gap_named and not gap.named:
            self.log(wall, "info", gap.sentence)
        self.gap_named = gap.named

    def on_probe_error(self, wall: float, message: str) -> None:
        """A live probe failed."""
        if message != self.probe_error:
            self.log(wall, "error", f"probe: {message}")
        self.probe_error = message

    def set_baseline(self, wall: float, snapshot: Snapshot, origin: BaselineOrigin) -> None:
        """A baseline was taken (or loaded from the store)."""
        self.baseline.set(snapshot, origin)
        self._said_restarted = False
        self.why_no_baseline = None
        if self.bench is not None and self.bench.kind == "baseline":
            self.bench = None
        tok_s = pool(snapshot.runs).decode_tok_s
        speed = f"{tok_s:.1f} tok/s" if tok_s else "no decode figure"
        self.log(wall, "info", f"baseline #{snapshot.id} ({snapshot.url}): {speed}, {origin.value}")
        self._say_if_baseline_lacks_categories(wall)

    def _say_if_baseline_lacks_categories(self, wall: float) -> None:
        """Once per baseline, while no category has a stored baseline of its own: a baseline
        holds one prompt's runs, so beside a probe rotating several categories the speedup is
        of their pooled probes, not one per category."""
        snapshot = self.baseline.snapshot
        if (
            snapshot is None
            or len(self.by_category) < 2
            or self.category_baselines.found
            or self._said_one_prompt == snapshot.id
        ):
            return
        self._said_one_prompt = snapshot.id
        self.log(
            wall,
            "info",
            f"baseline #{snapshot.id} was benched with one prompt: the speedup "
            "is of the probe's categories pooled, none per category "
            "(bench --probe-prompts benches a baseline per category)",
        )

    def no_baseline(self, wall: float, why: str, *, say: bool = True) -> None:
        """The store has no baseline that applies (`StoreBaseline`): why, for the View, and
        (`say`) once in the events log while the server runs with speculation and has none."""
        info = self.server.info
        speculative = info is not None and info.speculative is not None
        new = why != self.why_no_baseline
        if say and new and self.baseline.snapshot is None and speculative:
            self.log(wall, "info", f"{why} — {TAKE_BASELINE}")
        self.why_no_baseline = why

    def gpus_now(self) -> GpuState | None:
        """The GPUs' state over the recent readings, to compare with a baseline's."""
        return self.gpus.state()

    def recent(self) -> Pooled:
        """The recent probes pooled: what "now" is in the comparison (and the exporter's)."""
        return pool([p.figures for p in self.probes])

    def view(self, now_wall: float, stale_after: float) -> View:
        """The View of this moment (`live_view`; `stale_after`: seconds before a reading is
        stale)."""
        return live_view(self, now_wall, stale_after)
