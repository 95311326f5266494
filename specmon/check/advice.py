"""The advisor's findings in `check` (`whatif.advice`), placed just before the verdict."""

from __future__ import annotations

from collections.abc import Sequence

from specmon.analysis.acceptance import draft_length
from specmon.analysis.drafting import drafts_otherwise
from specmon.analysis.pooled import pool
from specmon.model import Snapshot
from specmon.reports.check_report import CheckReport, Finding
from specmon.whatif.advice import advise
from specmon.whatif.inputs import predict
from specmon.whatif.text import advisor_flags


def say_advice(report: CheckReport, probe: Snapshot, earlier: Sequence[Snapshot]) -> None:
    """The advisor's findings, just before the verdict (or the line saying there is no
    baseline), which stays the last line; they never change the exit code."""
    info = probe.server
    valid = report.baseline is not None and report.comparison is not None
    base_runs = report.baseline_probes or (report.baseline.runs if report.baseline else ())
    base = pool(base_runs) if valid and base_runs else None
    whatif = predict(info, probe.protocol, probe.runs, base, earlier).result
    drafting = report.drafting
    differs = bool(report.switches) or (
        drafting is not None
        and drafts_otherwise(drafting.off, drafting.draft_length, draft_length(info))
    )
    running = report.metrics.num_running_reqs if report.metrics is not None else None
    flag_for, off_flag = advisor_flags(info, differs=differs, running=running)
    report.advice = advise(
        info,
        protocol=probe.protocol,
        now=pool(probe.runs),
        comparison=report.comparison,
        whatif=whatif,
        earlier=earlier,
        flag_for=flag_for,
        off_flag=off_flag,
        traffic=report.traffic,
    )
    at = len(report.findings) - 1
    for advice in report.advice:
        flag = f" — change {advice.flag}" if advice.flag else ""
        text = f"advice: {advice.text}{flag} ({advice.evidence})"
        report.findings.insert(at, Finding(advice.level, text))
        at += 1
