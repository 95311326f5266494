"""`check`'s judgement: whether the baseline applies (`analysis.validity`, the rule the dashboard
uses), the conditions judged over every probe, and the verdict line with the design that gave it.
"""

from __future__ import annotations

from dataclasses import dataclass

from specmon.analysis.catalogue import Measured, figure
from specmon.analysis.comparison import Comparison, Verdict
from specmon.analysis.conditions import conditions_of
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.sequential import Look, SequentialRule
from specmon.analysis.validity import (
    LifetimeCheck,
    Validity,
    baseline_validity,
    rejudged_conditions,
)
from specmon.model import Snapshot
from specmon.reports.check_report import EXIT_DEGRADED, CheckReport
from specmon.session.baselines import BaselineLookup
from specmon.wording import counted, stale_words, verdict_text

DECODE, ACCEPT = figure("decode tok/s"), figure("accept length")
SPEEDUP, BREAK_EVEN = figure("speedup"), figure("break-even accept length")
"""The catalogued figures the verdict writes (`analysis.catalogue`: their digits and units)."""

CONDITIONS_DIFFER = "conditions differ from the baseline's: "
NO_DECODE = "no decode speed to compare"


def validity(
    report: CheckReport,
    probe: Snapshot,
    baseline: Snapshot,
    lifetime: LifetimeCheck,
    max_age_s: float,
    now: float,
    *,
    paired: bool = False,
) -> Validity:
    """Whether the baseline applies to the probe; a stale one is said here (no speedup).

    `paired`: the baseline server will be probed alternately if the baseline applies; then the
    conditions the stored runs ran under do not weigh on the verdict (said, not a warning)."""
    report.baseline = baseline
    # A live check: the baseline's age is counted to now.
    judged = baseline_validity(
        baseline,
        probe.server,
        now=now,
        lifetime=lifetime,
        max_age_s=max_age_s,
        protocol=probe.protocol,
        gpu=probe.gpu,
        conditions=conditions_of(run.conditions for run in probe.runs),
    )
    report.validity = judged
    if not judged.valid:
        report.add("warn", stale_text(baseline, judged), EXIT_DEGRADED)
    for warning in judged.warnings:
        report.add("info", f"GPUs differ from the baseline's: {warning}")
    for what in judged.conditions:
        if paired and judged.valid:
            report.add(
                "info",
                f"conditions differ from the stored baseline's: {what} — not weighed: both "
                "servers are probed now, alternately",
            )
        else:
            report.add("warn", f"{CONDITIONS_DIFFER}{what}", EXIT_DEGRADED)
    return judged


def stale_text(baseline: Snapshot, judged: Validity) -> str:
    """ "baseline #7 (http://…, 62.9 tok/s) is stale: restarted since": why no speedup."""
    return f"{baseline_tag(baseline)} {stale_words(judged)}"


def conditions_over_every_probe(
    report: CheckReport, baseline: Snapshot, judged: Validity
) -> Validity:
    """The conditions judged again over every probe the verdict rests on, not the first alone
    (the load may change while check probes): the first probe's lines give way to these."""
    later = rejudged_conditions(
        judged, baseline, conditions_of(run.conditions for run in report.probes)
    )
    if later.conditions != judged.conditions:
        said = {f"{CONDITIONS_DIFFER}{what}" for what in judged.conditions}
        report.findings = [f for f in report.findings if f.text not in said]
        for what in later.conditions:
            report.add("warn", f"{CONDITIONS_DIFFER}{what}", EXIT_DEGRADED)
    report.validity = later
    return later


def chosen_text(lookup: BaselineLookup) -> str:
    """ "baseline #7 (http://…): latest valid of the configuration and protocol; 3 considered;
    next: #4 (http://…) was taken with concurrency 16, the probe uses 1"."""
    assert lookup.baseline is not None
    base = lookup.baseline
    return f"baseline #{base.id} ({base.url}): {lookup.described()}"


def baseline_tag(baseline: Snapshot) -> str:
    """ "baseline #7 (http://…, 62.9 tok/s)"."""
    base = Measured(pool(baseline.runs))
    base_text = DECODE.shown(base) if DECODE.get(base) else "no decode figure"
    return f"baseline #{baseline.id} ({baseline.url}, {base_text})"


@dataclass(frozen=True, slots=True)
class VerdictWords:
    """The verdict's words and figures, written once for the verdict line and the progress."""

    speedup: str
    """ "+21.4% [+12.0%, +31.9%]" (`SPEEDUP.shown`)."""
    verdict: str
    """ "winning", "LOSING", "within noise" (`wording.verdict_text`)."""
    after: str
    """ "3 probes" or "5 pairs"."""

    @property
    def brief(self) -> str:
        """ "verdict after 3 probes: winning +21.4% [+12.0%, +31.9%]": check's progress line."""
        return f"verdict after {self.after}: {self.verdict} {self.speedup}"


def verdict_words(
    comparison: Comparison, measured: Measured, look: Look, unit: str
) -> VerdictWords:
    """The verdict's words from the comparison the rule's last look read."""
    return VerdictWords(
        SPEEDUP.shown(measured), verdict_text(comparison), counted(look.probes, unit)
    )


def judge(
    report: CheckReport,
    baseline: Snapshot,
    judged: Validity,
    look: Look,
    budget_s: float,
    rule: SequentialRule,
) -> VerdictWords | None:
    """The speedup line: never a clean ✓ unless the baseline is confirmed to apply; it names
    the design that gave it (the stored baseline, or its server probed alternately). Its words,
    or None without a decode speed to compare."""
    design = report.design
    paired = design is not None and design.interleaved
    comparison = look.comparison
    report.comparison = comparison
    report.compared = pool(report.probes) if comparison is not None else None
    if paired and design is not None:
        at = f"{comparison.base_tok_s:.1f} {DECODE.unit}" if comparison else "no decode figure"
        tag = f"{design.text}; baseline #{baseline.id}'s server at {at}"
        head, unit = tag, "pair"
    else:
        tag = baseline_tag(baseline)
        head, unit = f"vs {tag}", "probe"
    if comparison is None:
        report.add("warn", f"{head}: {NO_DECODE}", EXIT_DEGRADED)
        return None
    measured = Measured(report.compared, comparison)
    words = verdict_words(comparison, measured, look, unit)
    text = (
        f"{head}: now {DECODE.shown(measured)}, speedup {words.speedup} "
        f"({comparison.speedup.level:.1%} interval)"
    )
    accept, break_even = ACCEPT.written(measured), BREAK_EVEN.written(measured)
    if accept is not None and break_even is not None:
        text += f", accept {accept} vs break-even {break_even}"
    took = report.verdict_after_s or 0.0
    probes = f"{words.after} in {took:.1f} s"
    if comparison.verdict == Verdict.WITHIN_NOISE:
        probes += ", the cap" if look.probes >= rule.max_probes else f", the {budget_s:g} s budget"
        if not paired:
            probes += noisy_baseline(pool(baseline.runs), pool(report.probes))
    text += f" — {words.verdict} after {probes}"
    if judged.unverified:
        unverified = "; ".join(judged.unverified)
        report.add("warn", f"{text}; UNVERIFIED: {unverified}", EXIT_DEGRADED)
    elif comparison.verdict == Verdict.LOSING:
        report.add("warn", text, EXIT_DEGRADED)
    elif comparison.verdict == Verdict.WITHIN_NOISE:
        report.add("info", text)
    else:
        report.add("ok", text)
    return words


def noisy_baseline(base: Pooled, now: Pooled) -> str:
    """What to do when the baseline's own noise is most of the interval: more probes cannot
    narrow it (an H200 baseline of 3 runs with an 11.7% standard error left a 1.9× speedup
    undecided)."""
    if base.rel_se is None or (now.rel_se is not None and now.rel_se >= base.rel_se):
        return ""
    return (
        f"; most of the interval is the baseline's own noise ({base.runs} runs, "
        f"±{base.rel_se:.1%} standard error): bench it again with more --runs"
    )
