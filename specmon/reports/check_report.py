"""What `specmon check` found: its findings, its exit code and the `check --json` object.

Exit codes: 0 healthy; 1 degraded (metrics off, losing speculation, a failing probe, a baseline
that is stale or whose server's lifetime cannot be verified …);
2 unreachable or refused (nothing listening, no answer, auth failed, not a server specmon knows);
3 the snapshot store could not be read. The checks themselves are in `specmon.check`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from specmon.analysis.ab_runs import StoredAb
from specmon.analysis.acceptance import draft_length
from specmon.analysis.baseline_rule import BaselineChoice
from specmon.analysis.by_load import band_label, band_of
from specmon.analysis.catalogue import CATALOGUE, Measured
from specmon.analysis.comparison import Comparison
from specmon.analysis.drafting import Drafting
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.representative import TrafficGap
from specmon.analysis.validity import Validity
from specmon.model import RunFigures, ServerInfo, ServerMetrics, Snapshot
from specmon.storage.serialize import comparison_to_dict, crossover_to_dict
from specmon.whatif.advice import Advice
from specmon.wording import counted

EXIT_HEALTHY, EXIT_DEGRADED, EXIT_UNREACHABLE = 0, 1, 2
EXIT_STORE = 3
"""The snapshot store could not be read (no such --db, corrupt, locked): nothing was checked."""

Level = Literal["ok", "info", "warn", "fail"]
CHECK_SCHEMA = 10
"""The `check --json` object's version (2 added the probes, the interval's level, the looks;
3 the drafting now; 4 the traffic's accept length beside the probe's, and per-category probes;
5 the stored A/B of the server's configuration; 6 `ms_per_token`, and `decode_tok_s` without a
comparison; 7 `baseline_choice`: which rule picked the baseline and what else was considered;
8 each probe's `conditions` and the baseline's `conditions` differences; 9 `design`: the stored
baseline or the baseline server probed alternately, and `baseline_probes`; 10 `ttft_ms`, the
probes' mean TTFT)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of the verdict."""

    level: Level
    text: str


@dataclass(frozen=True, slots=True)
class Design:
    """Which design gave the speedup: the stored baseline's runs, or the baseline server probed
    alternately with the live one (`specmon.check.interleaving`, `analysis.paired`)."""

    interleaved: bool
    baseline_id: int | None
    url: str
    """The baseline's server (probed alternately when `interleaved`)."""
    pairs: int = 0
    """Pairs judged (interleaved)."""
    why_not_interleaved: str | None = None
    """Why the stored baseline was used instead (None when interleaved)."""

    @property
    def text(self) -> str:
        """ "interleaved with http://… (5 pairs)" or "stored baseline #7"."""
        if self.interleaved:
            return f"interleaved with {self.url} ({counted(self.pairs, 'pair')})"
        return f"stored baseline #{self.baseline_id}"


@dataclass(slots=True)
class CheckReport:
    """Everything `check` found, in order."""

    url: str
    findings: list[Finding] = field(default_factory=list)
    exit_code: int = EXIT_HEALTHY
    server: ServerInfo | None = None
    metrics: ServerMetrics | None = None
    probe: RunFigures | None = None
    """The first probe (the one every check takes)."""
    probes: tuple[RunFigures, ...] = ()
    """Every probe: the first, and those taken to reach a verdict against the baseline."""
    verdict_after_s: float | None = None
    """Seconds from the first probe's start to the verdict (None without one)."""
    withheld: int = 0
    """Probes whose accept length no verify step can give was withheld (`check.probing`)."""
    looks: int = 0
    """How many times the sequential rule judged the speedup."""
    baseline: Snapshot | None = None
    choice: BaselineChoice | None = None
    """How the baseline was chosen (`analysis.baseline_rule`); None for a plain server."""
    validity: Validity | None = None
    comparison: Comparison | None = None
    compared: Pooled | None = None
    """The probes `comparison` was read from, pooled (probes taken after the verdict, to judge
    the traffic, are not in it); None without a comparison."""
    advice: list[Advice] = field(default_factory=list)
    drafting: Drafting | None = None
    """What the server drafted while the check probed it (`analysis.drafting`)."""
    switches: list[str] = field(default_factory=list)
    """The drafting switches seen meanwhile."""
    metrics_after: ServerMetrics | None = None
    """The latest scrape after a probe: with `metrics`, the window of the traffic's figure."""
    traffic: TrafficGap | None = None
    """The probes' accept length beside the server's over all requests meanwhile."""
    categories: dict[str, Pooled] = field(default_factory=dict)
    """One probe per category of `--probe-prompts`, pooled per category (empty without)."""
    ab: StoredAb | None = None
    """The store's latest A/B of this configuration (`session.ab_lookup`)."""
    design: Design | None = None
    """Which design gave the speedup; None without a comparison attempted."""
    baseline_probes: tuple[RunFigures, ...] = ()
    """The baseline server's probes, one per pair (interleaved only)."""

    def add(self, level: Level, text: str, exit_code: int = EXIT_HEALTHY) -> None:
        """Record a finding and raise the exit code to at least `exit_code`."""
        self.findings.append(Finding(level, text))
        self.exit_code = max(self.exit_code, exit_code)


def report_to_dict(report: CheckReport) -> dict[str, object]:
    """The `check --json` object."""
    status = {EXIT_HEALTHY: "healthy", EXIT_DEGRADED: "degraded"}.get(
        report.exit_code, "unreachable"
    )
    server = report.server
    c = report.comparison
    measured = Measured(
        pooled=report.compared or (pool(report.probes) if report.probes else None), comparison=c
    )
    return {
        "schema": CHECK_SCHEMA,
        "url": report.url,
        "status": status,
        "exit_code": report.exit_code,
        "findings": [{"level": f.level, "text": f.text} for f in report.findings],
        "server": None
        if server is None
        else {
            "backend": server.backend,
            "version": server.version,
            "model": server.model,
            "metrics_enabled": report.metrics is not None,
            "speculative": None if server.speculative is None else asdict(server.speculative),
            "workers": [asdict(w) for w in report.metrics.workers] if report.metrics else [],
        },
        "probe": None if report.probe is None else asdict(report.probe),
        "probes": [asdict(run) for run in report.probes],
        "baseline": None
        if report.baseline is None
        else {
            "snapshot_id": report.baseline.id,
            "url": report.baseline.url,
            "created_at": report.baseline.created_at,
            "decode_tok_s": pool(report.baseline.runs).decode_tok_s,
            "valid": report.validity.valid if report.validity else None,
            "confirmed": report.validity.confirmed if report.validity else None,
            "reasons": list(report.validity.reasons) if report.validity else [],
            "unverified": list(report.validity.unverified) if report.validity else [],
            "conditions": list(report.validity.conditions) if report.validity else [],
        },
        "baseline_choice": _choice(report.choice),
        **{f.check_key: f.get(measured) for f in CATALOGUE if f.check_key is not None},
        "speedup_level": None if c is None else c.speedup.level,
        "looks": report.looks,
        "verdict_after_s": report.verdict_after_s,
        "verdict": None if c is None else c.verdict.value,
        "design": _design(report.design),
        "baseline_probes": [asdict(run) for run in report.baseline_probes],
        "advice": [asdict(a) for a in report.advice],
        "drafting": _drafting(report),
        "traffic": _traffic(report.traffic),
        "ab": _ab(report.ab),
        "categories": {
            name: {"accept_length": p.accept_length, "decode_tok_s": p.decode_tok_s, "runs": p.runs}
            for name, p in report.categories.items()
        },
    }


def _design(design: Design | None) -> dict[str, object] | None:
    """The `design` object: "stored" or "interleaved", its words, the baseline and its server,
    the pairs, and why the stored baseline was used instead of interleaving."""
    if design is None:
        return None
    return {
        "kind": "interleaved" if design.interleaved else "stored",
        "text": design.text,
        "baseline_id": design.baseline_id,
        "url": design.url,
        "pairs": design.pairs,
        "why_not_interleaved": design.why_not_interleaved,
    }


def _choice(choice: BaselineChoice | None) -> dict[str, object] | None:
    """The `baseline_choice` object: the rule that picked the baseline (or found none), what the
    user pinned, how many plain snapshots were considered, and the nearest rejected."""
    if choice is None:
        return None
    rejected = choice.rejected
    return {
        "rule": choice.rule,
        "pinned": choice.pinned,
        "considered": choice.considered,
        "rejected": None
        if rejected is None
        else {
            "snapshot_id": rejected.snapshot.id,
            "url": rejected.snapshot.url,
            "reasons": list(rejected.reasons),
        },
        "why_none": None if choice.baseline is not None else choice.why_none(),
    }


def _ab(ab: StoredAb | None) -> dict[str, object] | None:
    """The `ab` object: the stored A/B's speedup at each load, its load band, its crossover."""
    if ab is None:
        return None
    return {
        "ab_id": ab.ab_id,
        "ended_at": ab.ended_at,
        "levels": [
            {
                "concurrency": lv.concurrency,
                "band": band_label(start) if (start := band_of(lv.concurrency)) else None,
                "comparison": comparison_to_dict(lv.comparison),
                "valid": lv.valid,
            }
            for lv in ab.levels
        ],
        "crossover": crossover_to_dict(ab.crossover),
    }


def _traffic(gap: TrafficGap | None) -> dict[str, object] | None:
    """The `traffic` object: the server's accept length over the check's probes, the probes'."""
    if gap is None:
        return None
    return {
        "accept_length": gap.traffic,
        "source": gap.traffic_source,
        "probe_accept_length": gap.probe,
        "probe_rel_se": gap.probe_rel_se,
        "share": gap.share,
        "named": gap.named,
    }


def _drafting(report: CheckReport) -> dict[str, object] | None:
    """The `drafting` object: effective draft length, duty cycle, their source and switches."""
    d = report.drafting
    if d is None:
        return None
    return {
        "configured_draft_length": draft_length(report.server) if report.server else None,
        "effective_draft_length": d.draft_length,
        "duty_cycle": d.duty_cycle,
        "off": d.off,
        "source": d.source,
        "switches": list(report.switches),
    }
