"""`check`'s probes: one probe (an impossible accept length withheld), and the probes taken to
reach a verdict, against the stored baseline's runs (`Probing`) or with the baseline server
probed alternately (`probe_alternately`, `check.interleaving`); which design, and why."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from specmon.analysis.acceptance import draft_length, impossible_accept_length
from specmon.analysis.paired import why_not_interleaved
from specmon.analysis.pooled import Pooled
from specmon.analysis.sequential import Look, SequentialRule
from specmon.analysis.validity import LifetimeCheck
from specmon.check.interleaving import Interleaving
from specmon.errors import AuthFailed, SourceError
from specmon.measure.bench import BenchInvalid
from specmon.model import Protocol, Snapshot
from specmon.reports.check_report import EXIT_DEGRADED, EXIT_UNREACHABLE, CheckReport, Design

ProbeRunner = Callable[[Protocol], Awaitable[Snapshot]]
"""Runs the probe as a one-run snapshot (`snapshot.take_snapshot`)."""
BaselineProber = Callable[[str, Protocol], Awaitable[Snapshot]]
"""Runs one probe of the baseline server at a URL, for interleaved probing."""


async def probe(
    run_probe: ProbeRunner, protocol: Protocol, report: CheckReport, name: str = "probe"
) -> Snapshot | None:
    """One probe as a one-run snapshot; None, with the failure reported, when it fails. An
    accept length no verify step can give (above k + 1) is withheld, said, as on the dashboard."""
    try:
        snapshot = await run_probe(protocol)
    except AuthFailed as exc:
        report.add("fail", f"{name} refused: {exc}", EXIT_UNREACHABLE)
        return None
    except (SourceError, BenchInvalid) as exc:
        report.add("fail", f"{name} failed: {exc}", EXIT_DEGRADED)
        return None
    k = draft_length(snapshot.server)
    runs = []
    for run in snapshot.runs:
        if (why := impossible_accept_length(run.accept_length, k)) is not None:
            report.add("warn", f"{name} accept length withheld: {why}", EXIT_DEGRADED)
            report.withheld += 1
            run = replace(run, accept_length=None)
        runs.append(run)
    return replace(snapshot, runs=tuple(runs))


def why_not_paired(
    interleave: bool | None, probe_baseline: BaselineProber | None, lifetime: LifetimeCheck
) -> str | None:
    """Why the stored baseline's runs are used instead of probing its server alternately; None
    when it is probed alternately."""
    if interleave is False:
        return "--no-interleave"
    if probe_baseline is None:
        return "no way to probe the baseline server here"
    return why_not_interleaved(lifetime)


def say_design(
    report: CheckReport, baseline: Snapshot, why_not: str | None, interleave: bool | None
) -> None:
    """One line: which design the verdict will come from, and why not interleaved."""
    report.design = Design(why_not is None, baseline.id, baseline.url, 0, why_not)
    if why_not is None:
        report.add(
            "info",
            f"design: interleaved — {baseline.url} (baseline #{baseline.id}'s server, the same "
            "process) and this server probed alternately, each pair judged",
        )
    elif interleave:  # asked for and not possible: said as a warning
        report.add(
            "warn",
            f"design: stored baseline #{baseline.id}, not interleaved: {why_not}",
            EXIT_DEGRADED,
        )
    else:
        report.add("info", f"design: stored baseline #{baseline.id}, not interleaved: {why_not}")


async def probe_alternately(
    report: CheckReport,
    run_probe: ProbeRunner,
    probe_baseline: BaselineProber,
    protocol: Protocol,
    rule: SequentialRule,
    budget_s: float,
    clock: Callable[[], float],
    started: float,
) -> Look | None:
    """Probe the baseline server and this one alternately from the first probe until the rule
    stops on the pairs; the last look, or None when a probe failed (said)."""
    assert report.design is not None and report.probe is not None
    url = report.design.url

    async def base(protocol: Protocol) -> Snapshot:
        return await probe_baseline(url, protocol)

    interleaving = Interleaving(
        probe_now=lambda: probe(run_probe, protocol, report),
        probe_base=lambda: probe(base, protocol, report, "baseline server probe"),
        rule=rule,
        budget_s=budget_s,
        clock=clock,
        started=started,
    )
    found = await interleaving.until_decided(report.probe)
    if found is None:
        return None
    report.looks = found.looks
    report.verdict_after_s = clock() - started
    report.probes = tuple(p.now for p in found.pairs)
    report.baseline_probes = tuple(p.base for p in found.pairs)
    report.design = replace(report.design, pairs=len(found.pairs))
    return found.look


@dataclass(slots=True)
class Probing:
    """Probes against a valid baseline until the sequential rule stops (analysis/sequential)."""

    run_probe: ProbeRunner
    protocol: Protocol
    base: Pooled
    rule: SequentialRule
    budget_s: float
    clock: Callable[[], float]
    started: float

    async def until_decided(self, report: CheckReport, first: Snapshot) -> Look | None:
        """Probe on from the first probe; the last look, or None when a probe failed (said)."""
        runs = list(first.runs)
        while True:
            look = self.rule.step(runs, self.base, self.clock() - self.started, self.budget_s)
            if look.comparison is not None:
                report.looks += 1
            if look.done:
                report.verdict_after_s = self.clock() - self.started
                report.probes = tuple(runs)
                return look
            taken = await probe(self.run_probe, self.protocol, report)
            if taken is None:
                return None
            runs.extend(taken.runs)
