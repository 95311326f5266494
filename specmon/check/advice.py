"""The advisor's findings in `check` (`whatif.advice`), placed just before the verdict."""

from __future__ import annotations

from collections.abc import Sequence

from specmon.analysis.acceptance import draft_length
from specmon.analysis.drafting import adapts
from specmon.analysis.pooled import pool
from specmon.model import Snapshot
from specmon.reports.check_report import CheckReport, Finding
from specmon.whatif.advice import advise_runs


def say_advice(report: CheckReport, probe: Snapshot, earlier: Sequence[Snapshot]) -> None:
    """The advisor's findings, just before the verdict (or the line saying there is no
    baseline), which stays the last line; they never change the exit code."""
    info = probe.server
    valid = report.baseline is not None and report.comparison is not None
    base_runs = report.baseline_probes or (report.baseline.runs if report.baseline else ())
    base = pool(base_runs) if valid and base_runs else None
    drafting = report.drafting
    configured, switches = draft_length(info), len(report.switches)
    adaptive = drafting is not None and adapts(
        drafting.off, drafting.draft_length, configured, switches
    )
    _, report.advice = advise_runs(
        info,
        probe.runs,
        protocol=probe.protocol,
        base=base,
        comparison=report.comparison,
        earlier=earlier,
        adaptive=adaptive,
        running=report.metrics.num_running_reqs if report.metrics is not None else None,
        traffic=report.traffic,
    )
    at = len(report.findings) - 1
    for advice in report.advice:
        flag = f" — change {advice.flag}" if advice.flag else ""
        text = f"advice: {advice.text}{flag} ({advice.evidence})"
        report.findings.insert(at, Finding(advice.level, text))
        at += 1
