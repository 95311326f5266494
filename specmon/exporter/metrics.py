"""The exporter's metric families, written by prometheus-client from each target's View.

Every figure is the dashboard's (`ServerSession.view()`, `LiveState.recent()`: the same pooled
probes, comparison and validity), in base units: seconds, ratios, tokens per second; the pooled
probes' figures and their comparison are the metric catalogue's (`analysis.catalogue`), each
gauge under the name the catalogue gives it (`EXPORTED`), the others are `STATUS_GAUGES`; counters
end in `_total`; every family has a `target` label (the server's URL). A figure that is None
has no sample, so Prometheus sees it absent, never 0. docs/usage.md lists the families.

Prometheus keeps a gauge's last value as current until the series is gone, so what describes
the server now is served only while it is true now: the probe figures while the target is up
and its latest probe succeeded (`specmon_last_probe_success_timestamp_seconds` says when that
was); the speedup, its interval and the break-even besides only while the baseline applies
(`BaselineView.applies`); the baseline's state while the target is up (the check needs its
configuration). The baseline's own figures (its tok/s, its age) stay: they are the snapshot's.
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

from specmon.analysis.catalogue import CATALOGUE, Measured
from specmon.analysis.figures import run_step_cycles
from specmon.safe_text import safe_text
from specmon.session.server_session import ServerSession
from specmon.session.watch import ProbeOutcome

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CYCLE_BUCKETS_S = (0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0)
"""Upper bounds of `specmon_cycle_seconds`: one draft+verify step is 10-40 ms on the GPUs we
have seen (docs/design.md §1: 29.9 ms), CPU servers slower."""
LABEL = ["target"]
INFO_LABELS = ["name", "backend", "version", "model", "algorithm", "speculation", "tp_size"]
STATUS_GAUGES = {
    "specmon_target_up": "1 when specmon's latest reading of the server's info and /metrics "
    "is fresh, else 0 (down, stale, or not reached yet).",
    "specmon_probe_success": "1 when the latest probe succeeded, else 0.",
    "specmon_last_probe_success_timestamp_seconds": "When the latest successful probe "
    "finished (unix seconds); the probe figures are served only while the latest probe "
    "succeeded and the target is up.",
    "specmon_baseline_decode_tokens_per_second": "Decode tok/s of the baseline's runs, pooled.",
    "specmon_baseline_age_seconds": "Seconds since the baseline was taken.",
    "specmon_effective_draft_length": "Draft tokens per decode step that drafted, over the "
    "last 10 s of the server's /metrics (an adaptive server changes it by load); absent "
    "while no step drafted.",
    "specmon_drafting_duty_cycle": "Share of the server's decode steps that drafted at all, "
    "over the last 10 s (0: speculation off at this load).",
}
"""Name -> help of the gauges outside the catalogue: the target's and the probe's state, the
baseline's own figures (served while it is present, applying or not) and what the server drafts
now."""
EXPORTED = tuple((f.prometheus, f) for f in CATALOGUE if f.prometheus is not None)
"""The catalogue's figures served as gauges, by name: the recent probes' (their TTFT too, the
mean of theirs, where it was the latest probe's before) and their comparison's."""
GAUGES = {**STATUS_GAUGES, **{name: figure.help for name, figure in EXPORTED}}
"""Name -> help of the gauges with the `target` label alone."""
WORKER_UP = "specmon_worker_up"
WORKER_UP_HELP = (
    "Behind a router (--metrics-url): 1 when the worker's /metrics is in the target's summed "
    "figures, 0 when it is left out (down or unreadable: the sums are partial); served while "
    "the target is up."
)
BASELINE_STATE = "specmon_baseline_state"
BASELINE_STATE_HELP = (
    "1 for the baseline's state, 0 for the others: valid (applies, every rule checked), "
    "unverified (applies as far as is known: its server's restarts could not be checked), "
    "stale (a rule fails: restarted, flags differ, too old, another protocol)."
)


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

    def __init__(self, session: ServerSession) -> None:
        self.session = session
        self.cycles = CycleHistogram()
        session.probe_listeners.append(self.cycles.observe_probe)


class Families:
    """The families of one scrape, filled target by target."""

    def __init__(self) -> None:
        self.gauges = {
            name: GaugeMetricFamily(name, text, labels=LABEL) for name, text in GAUGES.items()
        }
        self.baseline_state = GaugeMetricFamily(
            BASELINE_STATE, BASELINE_STATE_HELP, labels=[*LABEL, "state"]
        )
        self.workers = GaugeMetricFamily(WORKER_UP, WORKER_UP_HELP, labels=[*LABEL, "worker"])
        self.info = InfoMetricFamily(
            "specmon_target",
            "What the server runs (from its server info).",
            labels=[*LABEL, *INFO_LABELS],
        )
        self.probes = CounterMetricFamily(
            "specmon_probes", "Probe requests specmon sent, by result.", labels=[*LABEL, "result"]
        )
        self.switches = CounterMetricFamily(
            "specmon_drafting_switches",
            "Switches of the "
            "server's drafting setting (effective draft "
            "length, or off) seen in its lifetime.",
            labels=LABEL,
        )
        self.cycles = HistogramMetricFamily(
            "specmon_cycle_seconds",
            "Every verify step's draft+verify cycle the probes timed (chunk gaps).",
            labels=LABEL,
        )

    def gauge(self, name: str, target: str, value: float | None, scale: float = 1) -> None:
        """A gauge's sample for a target, unless the figure is missing."""
        if value is not None:
            self.gauges[name].add_metric([target], value * scale)

    def add(self, exported: ExportedTarget) -> None:
        """A target's samples: those true now (the module's docstring says which)."""
        session = exported.session
        url = session.url
        view = session.view()
        up = view.identity.state == "live"
        # The probe figures are the server's now only while it answers and probes succeed.
        current = up and session.last_probe_ok is True
        self.gauge("specmon_target_up", url, 1.0 if up else 0.0)
        if up:
            for worker in view.server.workers:
                self.workers.add_metric([url, worker.url], 1.0 if worker.up else 0.0)
        server = session.server_info
        if server is not None:
            spec = server.speculative
            values = (
                session.target.name or "",
                server.backend,
                server.version or "",
                server.model or "",
                spec.algorithm if spec else "",
                view.identity.speculation,
                str(server.tp_size or ""),
            )
            # What a server says, made safe again on the way out (a replayed session's too).
            self.info.add_metric([url, *(safe_text(v) for v in values)], {})
        if session.last_probe_ok is not None:
            self.gauge("specmon_probe_success", url, 1.0 if session.last_probe_ok else 0.0)
        self.gauge(
            "specmon_last_probe_success_timestamp_seconds", url, session.last_probe_success_wall
        )
        self.probes.add_metric([url, "success"], session.probes_ok)
        self.probes.add_metric([url, "failure"], session.probes_failed)
        self.cycles.add_metric([url], exported.cycles.buckets(), exported.cycles.sum)
        drafting = view.spec.drafting
        if up and drafting is not None:
            self.gauge("specmon_effective_draft_length", url, drafting.draft_length)
            self.gauge("specmon_drafting_duty_cycle", url, drafting.duty_cycle)
            self.switches.add_metric([url], drafting.switches)
        baseline = view.baseline
        # What holds now: the recent probes while the target is up and probes succeed, their
        # comparison besides only while the baseline applies.
        applies = current and baseline.present and baseline.applies
        measured = Measured(
            pooled=session.recent() if current else None,
            comparison=baseline.comparison if applies else None,
        )
        for name, figure in EXPORTED:
            self.gauge(name, url, figure.get(measured), figure.prometheus_scale)
        if not baseline.present:
            return
        self.gauge("specmon_baseline_decode_tokens_per_second", url, baseline.tok_s)
        self.gauge("specmon_baseline_age_seconds", url, baseline.age_s)
        if up:
            for state, holds in baseline.states:
                self.baseline_state.add_metric([url, state], 1.0 if holds else 0.0)

    def __iter__(self) -> Iterator[Metric]:
        yield from self.gauges.values()
        yield from (self.baseline_state, self.workers, self.info, self.probes, self.switches)
        yield self.cycles


class FleetCollector(Collector):
    """prometheus-client collector over the targets `targets()` returns at each scrape."""

    def __init__(self, targets: Callable[[], Sequence[ExportedTarget]]) -> None:
        self.targets = targets

    def collect(self) -> Iterator[Metric]:
        """One family per figure, one sample per target that has it now."""
        families = Families()
        for exported in self.targets():
            families.add(exported)
        yield from families


def render(targets: Sequence[ExportedTarget]) -> bytes:
    """The exposition text of these targets."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(lambda: targets))
    return generate_latest(registry)
