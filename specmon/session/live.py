"""The dashboard's state: it takes samples, probe runs and baselines, and builds a View.

No I/O and no clock: every time comes with the sample or call that brings it. Every figure
comes from `analysis` (pooled runs, the comparison, validity), the same functions `check`,
`snapshots compare` and the exports use.
"""

from __future__ import annotations

import itertools
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

from specmon.analysis.acceptance import draft_length, impossible_accept_length, pooled_positions
from specmon.analysis.catalogue import CATALOGUE, Measured
from specmon.analysis.conditions import company_change, conditions_of
from specmon.analysis.figures import pooled_cycle_percentiles, run_step_cycles
from specmon.analysis.pooled import Pooled, ms_per_token, pool, pool_groups
from specmon.analysis.representative import TrafficGap, traffic_gap
from specmon.analysis.validity import LifetimeState
from specmon.backend_facts import find
from specmon.model import (
    CycleBasis,
    GpuState,
    ProbeResult,
    Protocol,
    RunFigures,
    Sample,
    Snapshot,
    SourceName,
    StepsSource,
)
from specmon.probe_prompts import DEFAULT_CATEGORY, DEFAULT_SET, ProbePrompt, category_protocols
from specmon.session.baseline_state import BaselineState, scraped_at
from specmon.session.baselines import BaselineOrigin
from specmon.session.category_baselines import CategoryBaselines
from specmon.session.figure_sources import probe_figure_sources
from specmon.session.gpu_tracker import GpuTracker, unavailable
from specmon.session.history_zoom import COLUMNS, LIVE, Zoomed
from specmon.session.tracker import Change, ServerTracker
from specmon.session.view import (
    RECENT_PROBES,
    BaselineView,
    BenchView,
    CategoryView,
    DecodeView,
    DraftingView,
    Event,
    FigureView,
    IdentityView,
    Level,
    ServerView,
    SourceView,
    SpecView,
    StateName,
    View,
)
from specmon.session.watch import INFO_EVERY_S
from specmon.session.window import HISTORY_S
from specmon.wording import (
    BUFFERED_STREAM,
    SPECULATION_NOT_SHOWN,
    SPECULATION_OFF,
    TAKE_BASELINE,
    brief_config,
    describe_config,
    partial_sums,
)

RATE_SPAN_S = 10.0  # server figures are averaged over about this long
MEAN_SPAN_S = 6 * RATE_SPAN_S  # accept length, TTFT, ITL: means over enough requests
HISTORY_STEP_S = 5.0  # the sparkline's points: means over 5 s (each rate already spans 10 s)
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
    renders it."""

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
        """Build the View of this moment (`stale_after`: seconds before a reading is stale)."""
        missing: list[tuple[str, str]] = []
        recent = self.recent()
        conditions = conditions_of(p.figures.conditions for p in self.probes)
        validity = self.baseline.validity(
            self.server.info, now_wall, self.gpus_now, conditions if self.probes else None
        )
        progress = self.bench if self.bench and self.bench.kind == "baseline" else None
        # A plain server and a baseline of its configuration are the same server: no speedup of
        # speculation to show (nor to export, nor to rank in the fleet).
        plain = self.server.info is not None and self.server.info.speculative is None
        baseline = self.baseline.view(
            now_wall, recent, validity, progress, self.why_no_baseline, plain=plain
        )
        # A replay's backend may not be installed here (`find`: None): no flags to name.
        kind = find(self.server.info.backend) if self.server.info is not None else None
        if kind is not None:
            baseline = replace(baseline, speculative_flags=kind.speculative_flags)
        if not baseline.present:
            why = self.why_no_baseline or "no baseline yet"
            missing.append(("speedup", f"{why} — {TAKE_BASELINE}"))
        elif plain:
            missing.append(("speedup", self._speculation_off()))
        elif baseline.comparison is None:
            missing.append(("speedup", "no timed probe of this server yet"))
        spec = self._spec(recent, baseline, missing, now_wall)
        sample = self.sample
        sources = (
            tuple(
                SourceView(n, sample.age(n), r.error, unavailable(r.value))
                for n, r in sample.readings.items()
            )
            if sample
            else ()
        )
        return View(
            self._identity(stale_after),
            self._decode(now_wall, recent, missing),
            spec,
            baseline,
            self._server(missing),
            self.gpus.view(self.sample.error(SourceName.GPU) if self.sample else None, missing),
            tuple(self.events),
            sources,
            tuple(missing),
            self.bench,
            probe_figure_sources(
                self.probes[-1].figures if self.probes else None,
                self.server.info.backend if self.server.info else None,
            ),
            _figures(Measured(recent, baseline.comparison if baseline.applies else None)),
        )

    def _identity(self, stale_after: float) -> IdentityView:
        info = self.server.info
        sample = self.sample
        state: StateName
        if info is None:
            error = sample.error(SourceName.INFO) if sample else None
            state = "down" if error else "connecting"
            return IdentityView(
                self.url,
                None,
                None,
                None,
                "unknown",
                None,
                False,
                state,
                error or "",
                replay=self.replay,
            )
        started_at = self.server.started_at
        up: float | None = None
        if started_at is not None and sample is not None:
            up = max(0.0, sample.wall - started_at)
        elif sample is not None and self.server.first_seen is not None:
            up = sample.t - self.server.first_seen
        # Each source ages by its own cadence: server info is read every INFO_EVERY_S, so with
        # /metrics off or failing, info read 4 s ago is as fresh as a scrape read 1 s ago.
        limits = {SourceName.INFO: stale_after + INFO_EVERY_S, SourceName.METRICS: stale_after}
        ages = {name: a for name in limits if sample and (a := sample.age(name)) is not None}
        freshest = min(ages.values()) if ages else None
        if self.server.down_since is not None:
            errors = [r.error for r in sample.readings.values() if r.error] if sample else []
            state, detail = "down", errors[0] if errors else "no answer"
        elif all(age > limits[name] for name, age in ages.items()) or freshest is None:
            state, detail = "stale", f"last answer {freshest:.0f}s ago" if freshest else ""
        else:
            state, detail = "live", ""
        return IdentityView(
            self.url,
            info.title,
            info.model,
            info.tp_size,
            describe_config(info.speculative),
            up,
            started_at is not None,
            state,
            detail,
            brief_config(info.speculative),
            replay=self.replay,
        )

    def _decode(
        self, now_wall: float, recent: Pooled, missing: list[tuple[str, str]]
    ) -> DecodeView:
        last = self.probes[-1] if self.probes else None
        if not self.probe_enabled:
            probe_state = "off (--no-probe)"
        elif self.probe_paused:
            probe_state = "paused (p)"
        elif self.probe_error:
            probe_state = f"failing: {self.probe_error}"
        else:
            probe_state = f"every {self.probe_every:g} s"
        figures = last.figures if last else None
        if last is None:
            missing.append(("decode tok/s", f"no probe run yet (probe {probe_state})"))
        elif figures is not None and figures.buffered:
            missing.append(("decode tok/s", BUFFERED_STREAM))
        rate = self.server.window.decode_tok_s(RATE_SPAN_S)
        current = int(self.sample.t // HISTORY_STEP_S) if self.sample else 0
        tok_s = figures.decode_tok_s if figures else None
        zoomed = self.zoomed
        # Completed steps only: the sparkline moves once per step, not at every tick.
        live = tuple(total / count for step, total, count in self.history if step < current)
        return DecodeView(
            decode_tok_s=tok_s,
            ms_per_token=ms_per_token(tok_s),
            ttft_ms=figures.ttft_ms if figures else None,
            probe_age_s=now_wall - last.wall if last else None,
            history=zoomed.decode if zoomed else live,
            history_source=rate.source if rate else None,
            probe_state=probe_state,
            history_points=COLUMNS if zoomed else int(HISTORY_S / HISTORY_STEP_S),
            history_span=(zoomed.level if zoomed else LIVE).label,
            history_marks=zoomed.marks if zoomed else (),
            recent_tok_s=recent.decode_tok_s,
            recent_runs=recent.runs,
        )

    def _speculation_off(self) -> str:
        """Why no speculation shows: it is off, or on a server that shows it only once a
        request has finished (TensorRT-LLM), none has yet."""
        info, latest = self.server.info, self.server.window.latest
        kind = find(info.backend) if info is not None else None
        late = kind is not None and kind.shows_speculation_late
        finished = latest is not None and bool(latest.num_requests_total)
        return SPECULATION_NOT_SHOWN if late and not finished else SPECULATION_OFF

    def _spec(
        self,
        recent: Pooled,
        baseline: BaselineView,
        missing: list[tuple[str, str]],
        now_wall: float,
    ) -> SpecView:
        info = self.server.info
        enabled = None if info is None else info.speculative is not None
        runs = [p.figures for p in self.probes]
        spread = pooled_cycle_percentiles([p.step_cycles for p in self.probes])
        window = self.server.window.accept_length(MEAN_SPAN_S)
        latest = self.server.window.latest
        if enabled is False:
            missing.append(("accept length", self._speculation_off()))
        elif recent.accept_length is None:
            missing.append(("accept length", "no probe with verify steps yet"))
        k = draft_length(info) if info is not None else None
        probe_accept, server_accept = recent.accept_length, window.value if window else None
        for name, value in (("accept length", probe_accept), ("server accept", server_accept)):
            if (why := impossible_accept_length(value, k)) is not None:
                missing.append((name, why))  # withheld, with why (acceptance.py)
        if impossible_accept_length(probe_accept, k):
            probe_accept = None
        if impossible_accept_length(server_accept, k):
            server_accept = None
        note = _cycle_note(runs[-1]) if runs else None
        if note and spread is None:
            missing.append(("cycle p50/p95", note))
        comparison = baseline.comparison if baseline.applies else None
        tokens: Counter[int] = Counter()
        if self.probes:
            for a, b in itertools.pairwise(self.probes[-1].result.chunks):
                tokens[b.completion_tokens - a.completion_tokens] += 1
        histogram = tuple(tokens.get(k, 0) for k in range(1, max(tokens, default=0) + 1))
        gap = self.traffic_gap()
        categories = self._categories(now_wall) if enabled else ()
        missing.extend(
            (f"speedup of {c.category}", c.why_no_speedup) for c in categories if c.why_no_speedup
        )
        return SpecView(
            enabled=enabled,
            accept_length=probe_accept,
            server_accept_length=server_accept if window and enabled else None,
            server_accept_source=window.source if window and enabled and server_accept else None,
            accept_rate=latest.spec_accept_rate if latest and enabled else None,
            cycle_ms_p50=spread[0] if spread else None,
            cycle_ms_p95=spread[1] if spread else None,
            cycle_ms=recent.cycle_ms,
            cycle_note=note,
            break_even=comparison.break_even if comparison else None,
            margin=comparison.margin if comparison else None,
            verdict=comparison.verdict if comparison else None,
            tokens_per_cycle=histogram if enabled else (),
            accept_history=self._accept_history() if enabled else (),
            accept_history_points=COLUMNS
            if self.zoomed
            else max(1, int(HISTORY_S / max(self.probe_every, 1.0))),
            accept_history_span=(self.zoomed.level if self.zoomed else LIVE).label,
            positions=pooled_positions(runs) if enabled else None,
            drafting=self.drafting_view() if enabled else None,
            categories=categories,
            traffic_gap=gap,
        )

    def drafting_view(self) -> DraftingView | None:
        """What the server drafts now (`SpecView.drafting`)."""
        info, sample = self.server.info, self.sample
        if info is None or sample is None:
            return None
        tracker = self.server.drafting
        figures = tracker.now(sample.t, RATE_SPAN_S)
        if figures is None:
            return None
        return DraftingView(
            configured=draft_length(info),
            draft_length=figures.draft_length,
            duty_cycle=figures.duty_cycle,
            off=figures.off,
            source=figures.source,
            history=tracker.history(sample.t, HISTORY_STEP_S),
            history_points=int(HISTORY_S / HISTORY_STEP_S),
            switches=tracker.switches,
            span_s=RATE_SPAN_S,
        )

    def _accept_history(self) -> tuple[float, ...]:
        if self.zoomed is not None:
            return self.zoomed.accept
        return tuple(v for _, v in self.accept_history)

    def _categories(self, now_wall: float) -> tuple[CategoryView, ...]:
        """Each category's recent probes pooled, and compared with its own baseline where one
        applies (`CategoryBaselines`); none for a set of one (the headline is it)."""
        info = self.server.info
        if len(self.by_category) < 2 or info is None:
            return ()
        pooled = pool_groups({name: list(runs) for name, runs in self.by_category.items()})
        bases = self.category_baselines
        gpu = self.gpus_now()
        speedups = bases.speedups(
            pooled,
            lambda category: bases.validity(
                category, info, now_wall, lambda s: self.baseline.lifetime_for(s, info), gpu
            ),
        )
        return tuple(
            CategoryView(
                name,
                p.accept_length,
                p.decode_tok_s,
                p.runs,
                speedups[name].comparison,
                speedups[name].why_none,
            )
            for name, p in pooled.items()
        )

    def _server(self, missing: list[tuple[str, str]]) -> ServerView:
        sample = self.sample
        reading = sample.readings.get(SourceName.METRICS) if sample else None
        latest = self.server.window.latest
        partial = partial_sums(latest.workers) if latest else None
        if reading is not None and reading.error:
            state = "off (--enable-metrics)" if "--enable-metrics" in reading.error else "failing"
            missing.append(("server figures", reading.error))
        else:
            state = partial or ("ok" if latest else "waiting")
        rate = self.server.window.decode_tok_s(RATE_SPAN_S)
        ttft, itl = self.server.window.latency_means(MEAN_SPAN_S)
        idle = self.server.window.generating(RATE_SPAN_S) is False
        running = latest.num_running_reqs if latest else None
        return ServerView(
            running=running,
            queued=latest.num_queue_reqs if latest else None,
            kv_usage=latest.token_usage if latest else None,
            decode_tok_s=rate.value if rate else None,
            decode_source=rate.source if rate else None,
            ttft_ms=1000 * ttft if ttft is not None else None,
            itl_ms=1000 * itl if itl is not None else None,
            metrics_state=state,
            idle=idle,
            running_stale=idle and running is not None and running > 0,
            rate_span_s=RATE_SPAN_S,
            latency_span_s=MEAN_SPAN_S,
            itl_per_step=bool(
                self.server.info is not None
                and (kind := find(self.server.info.backend)) is not None
                and kind.itl_per_step
            ),
            workers=latest.workers if latest else (),
        )


def _cycle_note(figures: RunFigures) -> str | None:
    """What the cycle percentiles of a run rest on, or why it has none."""
    if figures.buffered:
        return BUFFERED_STREAM
    if figures.cycle_source == StepsSource.TIMINGS:
        return "llama.cpp streams one chunk per token: no per-step gaps (cycle from its timings)"
    if figures.cycle_basis == CycleBasis.PER_STEP:
        return "chunks carried several steps: each gap divided by the steps it spans"
    return None


def _figures(measured: Measured) -> tuple[FigureView, ...]:
    """The catalogue's figures of the recent probes and their comparison, as the dashboard
    shows them."""
    return tuple(FigureView(f.key, f.get(measured), f.shown(measured)) for f in CATALOGUE)
