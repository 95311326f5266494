"""The exporter's metric families, written by prometheus-client from each target's View.

Every figure is the dashboard's (`TargetSession.view()`, `LiveState.recent()`: the same pooled
probes, comparison and validity), in base units: seconds, ratios, tokens per second; counters
end in `_total`; every family has a `target` label (the server's URL). A figure that is None
has no sample, so Prometheus sees it absent, never 0. docs/usage.md lists the families.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from specmon.analysis.figures import run_step_cycles
from specmon.session.fleet import TargetSession
from specmon.session.watch import ProbeOutcome

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CYCLE_BUCKETS_S = (0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0)
"""Upper bounds of `specmon_cycle_seconds`: one draft+verify step is 10-40 ms on the GPUs we
have seen (DESIGN.md §1: 29.9 ms), CPU servers slower."""
LABEL = ["target"]
INFO_LABELS = ["name", "backend", "version", "model", "algorithm", "speculation", "tp_size"]
GAUGES = (
    ("specmon_target_up", "1 when specmon's latest reading of the server's info and /metrics "
     "is fresh, else 0 (down, stale, or not reached yet)."),
    ("specmon_probe_success", "1 when the latest probe succeeded, else 0."),
    ("specmon_probe_decode_tokens_per_second", "Decode tok/s of the recent probes, pooled: "
     "decode tokens / decode seconds (prefill excluded)."),
    ("specmon_probe_accept_length", "Accept length of the recent probes, pooled: decode "
     "tokens / verify steps after the first token."),
    ("specmon_probe_cycle_seconds", "Mean draft+verify cycle of the recent probes: decode "
     "seconds / verify steps."),
    ("specmon_probe_ttft_seconds", "Time to first token of the latest probe."),
    ("specmon_speedup_ratio", "Recent probes' decode tok/s over the baseline's, minus 1 "
     "(0.21 = 21% faster); it applies when specmon_baseline_valid is 1."),
    ("specmon_break_even_accept_length", "Accept length above which speculation wins: cycle "
     "/ baseline ms per token."),
    ("specmon_baseline_decode_tokens_per_second", "Decode tok/s of the baseline's runs, pooled."),
    ("specmon_baseline_valid", "1 when the baseline applies (same configuration but "
     "speculation, same server lifetime, fresh, same protocol), else 0."),
    ("specmon_baseline_age_seconds", "Seconds since the baseline was taken."),
)  # fmt: skip
"""(name, help) of the gauges, in the order `collect` unpacks them."""


class CycleHistogram:
    """Every verify step's cycle a target's probes timed, counted into buckets since start."""

    def __init__(self, bounds: Sequence[float] = CYCLE_BUCKETS_S) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0

    def observe_probe(self, outcome: ProbeOutcome) -> None:
        """Count a probe's steps (`analysis.figures.run_step_cycles`: the p50/p95's steps)."""
        for ms in run_step_cycles(outcome.result):
            seconds = ms / 1000
            self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
            self.sum += seconds

    def buckets(self) -> list[tuple[str, float]]:
        """(le, cumulative count) pairs, ending with +Inf."""
        cumulative, total = [], 0
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            total += count
            cumulative.append((bound, float(total)))
        return cumulative


class ExportedTarget:
    """A session and what the exporter accumulates of it (its cycle histogram)."""

    def __init__(self, session: TargetSession) -> None:
        self.session = session
        self.cycles = CycleHistogram()
        session.probe_listeners.append(self.cycles.observe_probe)


class FleetCollector(Collector):
    """prometheus-client collector over the targets `targets()` returns at each scrape."""

    def __init__(self, targets: Callable[[], Sequence[ExportedTarget]]) -> None:
        self.targets = targets

    def collect(self) -> Iterator[Metric]:
        """One family per figure, one sample per target that has it."""
        (
            up,
            success,
            decode,
            accept,
            cycle_mean,
            ttft,
            speedup,
            break_even,
            base_tok_s,
            valid,
            age,
        ) = (GaugeMetricFamily(name, text, labels=LABEL) for name, text in GAUGES)
        info = InfoMetricFamily("specmon_target", "What the server runs (from its server info).",
                                labels=[*LABEL, *INFO_LABELS])  # fmt: skip
        probes = CounterMetricFamily("specmon_probes", "Probe requests specmon sent, by result.",
                                     labels=[*LABEL, "result"])  # fmt: skip
        cycles = HistogramMetricFamily("specmon_cycle_seconds", "Every verify step's "
                                       "draft+verify cycle the probes timed (chunk gaps).",
                                       labels=LABEL)  # fmt: skip
        for exported in self.targets():
            session = exported.session
            view = session.view()
            recent = session.live.recent()
            label = [session.url]
            up.add_metric(label, 1.0 if view.identity.state == "live" else 0.0)
            server = session.live.server.info
            if server is not None:
                spec = server.speculative
                info.add_metric([session.url, session.target.name or "", server.backend,
                                 server.version or "", server.model or "",
                                 spec.algorithm if spec else "", view.identity.speculation,
                                 str(server.tp_size or "")], {})  # fmt: skip
            if session.last_probe_ok is not None:
                success.add_metric(label, 1.0 if session.last_probe_ok else 0.0)
            probes.add_metric([session.url, "success"], session.probes_ok)
            probes.add_metric([session.url, "failure"], session.probes_failed)
            _add(decode, label, recent.decode_tok_s)
            _add(accept, label, recent.accept_length)
            _add(cycle_mean, label, recent.cycle_ms, 1e-3)
            _add(ttft, label, view.decode.ttft_ms, 1e-3)
            cycles.add_metric(label, exported.cycles.buckets(), exported.cycles.sum)
            baseline = view.baseline
            comparison = baseline.comparison
            if comparison is not None:
                speedup.add_metric(label, comparison.speedup.value)
                _add(break_even, label, comparison.break_even)
            if baseline.present:
                _add(base_tok_s, label, baseline.tok_s)
                _add(age, label, baseline.age_s)
                if baseline.validity is not None:
                    valid.add_metric(label, 1.0 if baseline.validity.valid else 0.0)
        yield from (up, info, success, probes, decode, accept, cycle_mean, ttft, cycles,
                    speedup, break_even, base_tok_s, valid, age)  # fmt: skip


def _add(
    family: GaugeMetricFamily, label: list[str], value: float | None, scale: float = 1
) -> None:
    if value is not None:
        family.add_metric(label, value * scale)


def render(targets: Sequence[ExportedTarget]) -> bytes:
    """The exposition text of these targets."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(lambda: targets))
    return generate_latest(registry)
