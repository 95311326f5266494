"""The dashboard's state: it takes samples, probe runs and baselines, and builds a View.

No I/O and no clock: every time comes with the sample or call that brings it.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter, deque
from dataclasses import dataclass, replace

from specmon.analysis.breakeven import break_even_accept_length, ms_per_token
from specmon.analysis.gpus import gpu_line, gpu_state, gpu_verdict
from specmon.analysis.stats import speedup
from specmon.analysis.tracker import ServerTracker
from specmon.analysis.validity import baseline_validity
from specmon.analysis.view import (
    BaselineView,
    DecodeView,
    Event,
    GpuView,
    IdentityView,
    Level,
    ServerView,
    SourceView,
    SpecView,
    StateName,
    View,
)
from specmon.analysis.window import HISTORY_S
from specmon.model import (
    ProbeResult,
    Protocol,
    RunFigures,
    Sample,
    Snapshot,
    Telemetry,
)

RATE_SPAN_S = 10.0  # server figures are averaged over about this long
HISTORY_STEP_S = 5.0  # the sparkline's points: means over 5 s (each rate already spans 10 s)
RECENT_TELEMETRY = 20  # GPU readings summarised for the baseline comparison
GPU_HISTORY = 60  # per-GPU utilisation points kept (a minute at 1 s)
RECENT_PROBES = 5  # the probe runs compared with the baseline
MAX_EVENTS = 200


@dataclass(frozen=True, slots=True)
class ProbeRun:
    """One live probe: when it finished (wall) and its figures."""

    wall: float
    t: float
    figures: RunFigures
    result: ProbeResult


class LiveState:
    """Everything the dashboard knows, fed by the app's workers; `view()` renders it."""

    def __init__(self, url: str, protocol: Protocol, *, max_age_s: float, probe_every: float):
        self.url = url
        self.protocol = protocol
        self.max_age_s = max_age_s
        self.probe_every = probe_every
        self.server = ServerTracker("server")
        self.baseline_server = ServerTracker("baseline server")
        self.sample: Sample | None = None
        self.history: deque[tuple[int, float, int]] = deque()
        """(step index, sum of rates, their count): one sparkline point per HISTORY_STEP_S."""
        self.probes: deque[ProbeRun] = deque(maxlen=RECENT_PROBES)
        self.accept_history: deque[tuple[float, float]] = deque()
        self.probe_error: str | None = None
        self.probe_paused = False
        self.probe_enabled = True
        self.baseline: Snapshot | None = None
        self.baseline_origin: str | None = None
        self.baseline_restarted = False
        self.baseline_progress: tuple[int, int, float | None] | None = None
        self.waiting_for_baseline = False
        self.events: deque[Event] = deque(maxlen=MAX_EVENTS)
        self.telemetry: Telemetry | None = None
        self.recent_telemetry: deque[Telemetry] = deque(maxlen=RECENT_TELEMETRY)
        self.gpu_util: dict[int, deque[float]] = {}
        self._telemetry_seq = 0

    def log(self, wall: float, level: Level, text: str) -> None:
        """Add an event."""
        self.events.append(Event(wall, level, text))

    def on_sample(self, sample: Sample) -> None:
        """A tick of the monitored server's sampler."""
        self.sample = sample
        for level, text, restart in self.server.update(sample):
            self.log(sample.wall, level, text)
            if restart:
                self.probes.clear()  # runs of another lifetime are not this server's speed
                self.accept_history.clear()
        self._new_telemetry(sample)
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

    def _new_telemetry(self, sample: Sample) -> None:
        reading = sample.readings.get("gpu")
        if reading is None or reading.seq == self._telemetry_seq:
            return
        self._telemetry_seq = reading.seq
        if not isinstance(reading.value, Telemetry):
            return
        self.telemetry = reading.value
        self.recent_telemetry.append(reading.value)
        for gpu in reading.value.gpus:
            history = self.gpu_util.setdefault(gpu.index, deque(maxlen=GPU_HISTORY))
            if gpu.utilization_pct is not None:
                history.append(gpu.utilization_pct)

    def on_baseline_sample(self, sample: Sample) -> None:
        """A tick of the baseline server's sampler (with `--baseline-url`)."""
        for level, text, restart in self.baseline_server.update(sample):
            self.log(sample.wall, level, text)
            if restart and self.baseline is not None and not self.baseline_restarted:
                self.baseline_restarted = True
                self.log(
                    sample.wall, "error", "the baseline no longer applies: press b for a fresh one"
                )

    def on_probe(self, wall: float, t: float, figures: RunFigures, result: ProbeResult) -> None:
        """A live probe finished."""
        self.probes.append(ProbeRun(wall, t, figures, result))
        if figures.accept_length is not None:
            self.accept_history.append((t, figures.accept_length))
        while self.accept_history and self.accept_history[0][0] < t - HISTORY_S:
            self.accept_history.popleft()
        if self.probe_error is not None:
            self.log(wall, "info", "probe recovered")
        self.probe_error = None

    def on_probe_error(self, wall: float, message: str) -> None:
        """A live probe failed."""
        if message != self.probe_error:
            self.log(wall, "error", f"probe: {message}")
        self.probe_error = message

    def set_baseline(self, wall: float, snapshot: Snapshot, origin: str) -> None:
        """A baseline was taken (or loaded from the store)."""
        self.baseline = snapshot
        self.baseline_origin = origin
        self.baseline_restarted = False
        self.baseline_progress = None
        self.waiting_for_baseline = False
        tok_s = [r.decode_tok_s for r in snapshot.runs if r.decode_tok_s is not None]
        median = f"{statistics.median(tok_s):.1f} tok/s" if tok_s else "no decode figure"
        self.log(wall, "info", f"baseline #{snapshot.id} taken: {median} ({origin})")

    def view(self, now_wall: float, stale_after: float) -> View:
        """Build the View of this moment (`stale_after`: seconds before a reading is stale)."""
        missing: list[tuple[str, str]] = []
        identity = self._identity(stale_after)
        decode = self._decode(now_wall, missing)
        spec = self._spec(missing)
        baseline = self._baseline(now_wall, spec, missing)
        if baseline.present and baseline.valid and spec.cycle_ms is not None and baseline.tok_s:
            be = break_even_accept_length(spec.cycle_ms, ms_per_token(baseline.tok_s))
            margin = spec.accept_length - be if spec.accept_length is not None else None
            spec = replace(spec, break_even=be, margin=margin)
        server = self._server(missing)
        gpus = self._gpus(missing)
        sample = self.sample
        sources = (
            tuple(SourceView(n, sample.age(n), r.error) for n, r in sample.readings.items())
            if sample
            else ()
        )
        return View(identity, decode, spec, baseline, server, gpus, tuple(self.events), sources,
                    tuple(missing))  # fmt: skip

    def _identity(self, stale_after: float) -> IdentityView:
        info = self.server.info
        sample = self.sample
        state: StateName
        if info is None:
            error = sample.readings["info"].error if sample and "info" in sample.readings else None
            state = "down" if error else "connecting"
            return IdentityView(self.url, None, None, None, "unknown", None, state, error or "")
        spec = info.speculative.describe() if info.speculative else "no speculation"
        up = sample.t - self.server.first_seen if sample and self.server.first_seen else None
        ages = [a for name in ("info", "metrics") if sample and (a := sample.age(name)) is not None]
        freshest = min(ages) if ages else None
        if self.server.down_since is not None:
            errors = [r.error for r in sample.readings.values() if r.error] if sample else []
            state, detail = "down", errors[0] if errors else "no answer"
        elif freshest is None or freshest > stale_after:
            state, detail = "stale", f"last answer {freshest:.0f}s ago" if freshest else ""
        else:
            state, detail = "live", ""
        return IdentityView(self.url, info.title, info.model, info.tp_size, spec, up, state, detail)

    def _decode(self, now_wall: float, missing: list[tuple[str, str]]) -> DecodeView:
        last = self.probes[-1] if self.probes else None
        if not self.probe_enabled:
            probe_state = "off (--no-probe)"
        elif self.probe_paused:
            probe_state = "paused (p)"
        elif self.probe_error:
            probe_state = f"failing: {self.probe_error}"
        else:
            probe_state = f"every {self.probe_every:g} s"
        if last is None:
            missing.append(("decode tok/s", f"no probe run yet (probe {probe_state})"))
        rate = self.server.window.decode_tok_s(RATE_SPAN_S)
        current = int(self.sample.t // HISTORY_STEP_S) if self.sample else 0
        figures = last.figures if last else None
        tok_s = figures.decode_tok_s if figures else None
        return DecodeView(
            decode_tok_s=tok_s,
            ms_per_token=ms_per_token(tok_s) if tok_s else None,
            ttft_ms=figures.ttft_ms if figures else None,
            probe_age_s=now_wall - last.wall if last else None,
            # Completed steps only: the sparkline moves once per step, not at every tick.
            history=tuple(total / count for step, total, count in self.history if step < current),
            history_source=rate.source if rate else None,
            probe_state=probe_state,
        )

    def _spec(self, missing: list[tuple[str, str]]) -> SpecView:
        info = self.server.info
        enabled = None if info is None else info.speculative is not None
        runs = [p.figures for p in self.probes]
        accepts = [f.accept_length for f in runs if f.accept_length is not None]
        cycles = [f.cycle_ms for f in runs if f.cycle_ms is not None]
        gaps = [f.cycle_ms_p50 for f in runs if f.cycle_ms_p50 is not None]
        p95s = [f.cycle_ms_p95 for f in runs if f.cycle_ms_p95 is not None]
        window = self.server.window.accept_length(RATE_SPAN_S * 6)
        latest = self.server.window.latest
        if enabled is False:
            missing.append(("accept length", "speculation is off on this server"))
        elif not accepts:
            missing.append(("accept length", "no probe with verify steps yet"))
        tokens: Counter[int] = Counter()
        if self.probes:
            chunks = self.probes[-1].result.chunks
            for a, b in itertools.pairwise(chunks):
                tokens[b.completion_tokens - a.completion_tokens] += 1
        histogram = tuple(tokens.get(k, 0) for k in range(1, max(tokens, default=0) + 1))
        return SpecView(
            enabled=enabled,
            accept_length=statistics.median(accepts) if accepts else None,
            server_accept_length=window.value if window and enabled else None,
            server_accept_source=window.source if window and enabled else None,
            accept_rate=latest.spec_accept_rate if latest and enabled else None,
            cycle_ms_p50=statistics.median(gaps) if gaps else None,
            cycle_ms_p95=statistics.median(p95s) if p95s else None,
            cycle_ms=statistics.median(cycles) if cycles else None,
            break_even=None,
            margin=None,
            tokens_per_cycle=histogram if enabled else (),
            accept_history=tuple(v for _, v in self.accept_history) if enabled else (),
        )

    def _baseline(
        self, now_wall: float, spec: SpecView, missing: list[tuple[str, str]]
    ) -> BaselineView:
        snapshot = self.baseline
        if snapshot is None:
            missing.append(("speedup", "no baseline yet: press b"))
            return BaselineView(
                False, None, None, None, None, 0, None, None, None, None, None, None, None, (),
                (), self.baseline_progress, self.waiting_for_baseline,
            )  # fmt: skip
        base = [r.decode_tok_s for r in snapshot.runs if r.decode_tok_s is not None]
        current = [p.figures.decode_tok_s for p in self.probes if p.figures.decode_tok_s]
        reasons: tuple[str, ...] = ()
        warnings: tuple[str, ...] = ()
        info = self.server.info
        if info is not None and self.probes:
            run = Snapshot(now_wall, self.url, None, info, self.protocol,
                           tuple(p.figures for p in self.probes),
                           gpu=gpu_state(list(self.recent_telemetry)))  # fmt: skip
            validity = baseline_validity(
                snapshot, run, now=now_wall, max_age_s=self.max_age_s,
                restarted=self.baseline_restarted,
            )  # fmt: skip
            reasons, warnings = validity.reasons, validity.warnings
        elif self.baseline_restarted:
            reasons = ("the baseline server restarted since",)
        gain = speedup(current, base) if current and base else None
        if gain is None:
            missing.append(("speedup", "no probe run of this server yet"))
        return BaselineView(
            present=True,
            snapshot_id=snapshot.id,
            tok_s=statistics.median(base) if base else None,
            tok_s_min=min(base) if base else None,
            tok_s_max=max(base) if base else None,
            runs=len(snapshot.runs),
            age_s=max(0.0, now_wall - snapshot.created_at),  # the wall clock may move back
            origin=self.baseline_origin,
            current_tok_s=statistics.fmean(current) if current else None,
            speedup=gain.value if gain else None,
            speedup_low=gain.low if gain else None,
            speedup_high=gain.high if gain else None,
            valid=not reasons if self.probes else None,
            reasons=reasons,
            warnings=warnings,
            progress=self.baseline_progress,
            waiting=self.waiting_for_baseline,
        )

    def _gpus(self, missing: list[tuple[str, str]]) -> GpuView:
        t = self.telemetry
        error = (
            self.sample.readings["gpu"].error
            if self.sample and "gpu" in self.sample.readings
            else None
        )
        if t is None:
            why = error or "no GPU reading yet"
            missing.append(("GPUs", why))
            return GpuView(None, why, None, False, (), (), None)
        if t.unavailable is not None:
            why = t.unavailable + (f"; {t.hint}" if t.hint else "")
            missing.append(("GPUs", why))
        verdict = gpu_verdict(t) if t.unavailable is None else None
        return GpuView(
            source=t.source,
            unavailable=(t.unavailable + (f"; {t.hint}" if t.hint else ""))
            if t.unavailable
            else None,
            summary=verdict.text if verdict else None,
            warn=verdict is not None and verdict.level == "warn",
            lines=tuple(gpu_line(g) for g in t.gpus),
            util_history=tuple(tuple(self.gpu_util.get(g.index, ())) for g in t.gpus),
            host=_host_line(t),
        )

    def _server(self, missing: list[tuple[str, str]]) -> ServerView:
        sample = self.sample
        reading = sample.readings.get("metrics") if sample else None
        latest = self.server.window.latest
        if reading is not None and reading.error:
            state = "off (--enable-metrics)" if "--enable-metrics" in reading.error else "failing"
            missing.append(("server figures", reading.error))
        else:
            state = "ok" if latest else "waiting"
        rate = self.server.window.decode_tok_s(RATE_SPAN_S)
        ttft, itl = self.server.window.latency_means(RATE_SPAN_S * 6)
        return ServerView(
            running=latest.num_running_reqs if latest else None,
            queued=latest.num_queue_reqs if latest else None,
            kv_usage=latest.token_usage if latest else None,
            decode_tok_s=rate.value if rate else None,
            decode_source=rate.source if rate else None,
            ttft_ms=1000 * ttft if ttft is not None else None,
            itl_ms=1000 * itl if itl is not None else None,
            metrics_state=state,
        )


def _host_line(t: Telemetry) -> str | None:
    """`host CPU 12% · mem 40/128 GiB · server pid 123 CPU 95% RSS 2.1 GiB`, from what is known."""
    parts = []
    host = t.host
    if host is not None:
        if host.cpu_percent is not None:
            parts.append(f"host CPU {host.cpu_percent:.0f}%")
        if host.memory_used_bytes is not None and host.memory_total_bytes:
            parts.append(f"mem {host.memory_used_bytes / 2**30:.0f}/"
                         f"{host.memory_total_bytes / 2**30:.0f} GiB")  # fmt: skip
    process = t.server_process
    if process is not None:
        cpu = f" CPU {process.cpu_percent:.0f}%" if process.cpu_percent is not None else ""
        rss = f" RSS {process.rss_bytes / 2**30:.1f} GiB" if process.rss_bytes is not None else ""
        parts.append(f"server pid {process.pid}{cpu}{rss}")
    elif t.server_process_missing:
        parts.append(f"server process: {t.server_process_missing}")
    return " · ".join(parts) or None
