"""The probes' accept length beside the server's over all its requests while they ran
(`analysis.representative`), and the probes per category of `--probe-prompts`."""

from __future__ import annotations

from collections.abc import Sequence

from specmon.analysis.acceptance import draft_length
from specmon.analysis.catalogue import Measured, figure
from specmon.analysis.pooled import pool, pool_groups
from specmon.analysis.rates import server_accept_length
from specmon.analysis.representative import GAP_SHARE, TrafficGap, only_probes, traffic_gap
from specmon.check.probing import ProbeRunner, probe
from specmon.model import Protocol, RunFigures
from specmon.probe_prompts import ProbePrompt, Rotation
from specmon.reports.check_report import CheckReport, Level
from specmon.wording import DASH

DECODE, ACCEPT = figure("decode tok/s"), figure("accept length")

TRAFFIC_PROBES = 3
"""Probes enough to judge the gap to the traffic by their spread (one has none)."""


async def say_traffic(run_probe: ProbeRunner, protocol: Protocol, report: CheckReport) -> bool:
    """The probes' accept length beside the server's over all its requests while they ran;
    a named gap is a warning that leaves the exit code alone.

    One probe (no baseline to probe against) 10% off the traffic is not judged alone: more
    are taken, up to `TRAFFIC_PROBES`. False when one of them failed (said).
    """
    gap = gap_now(report)
    while gap is not None and gap.probe_rel_se is None and abs(gap.share) > GAP_SHARE:
        if gap.only_probes:
            break  # the probes' own figure: no gap to judge
        if len(report.probes) >= TRAFFIC_PROBES:
            break
        taken = await probe(run_probe, protocol, report)
        if taken is None:
            return False
        report.probes = (*report.probes, *taken.runs)
        gap = gap_now(report)
    if gap is not None:
        report.traffic = gap
        said: Level = "warn" if gap.named else "info" if gap.only_probes else "ok"
        report.add(said, f"traffic: {gap.sentence}")
    return True


def gap_now(report: CheckReport) -> TrafficGap | None:
    """The gap over the scrapes before the first probe and after the last; None without both."""
    if report.metrics is None or report.metrics_after is None:
        return None
    traffic = server_accept_length(report.metrics, report.metrics_after)
    k = None if report.server is None else draft_length(report.server)
    alone = only_probes(report.metrics, report.metrics_after, report.probes)
    return traffic_gap(pool(report.probes), traffic, probes_alone=alone, draft_length=k)


async def by_category(
    run_probe: ProbeRunner, prompts: Sequence[ProbePrompt], tokens: int, report: CheckReport
) -> bool:
    """One probe per category, its figures pooled per category; False when one failed (said).

    A baseline is benched with one prompt: no speedup per category is claimed from it.
    """
    rotation = Rotation(prompts)
    runs: dict[str, list[RunFigures]] = {}
    for _ in rotation.categories:
        prompt = rotation.next()
        protocol = Protocol(1, 0, prompt.max_tokens or tokens, prompt.temperature, prompt.prompt)
        taken = await probe(run_probe, protocol, report)
        if taken is None:
            return False
        runs.setdefault(prompt.category, []).extend(taken.runs)
    report.categories = pool_groups(runs)
    cells = [_category_cell(name, Measured(p)) for name, p in report.categories.items()]
    note = ""
    if report.baseline is not None:
        note = (
            f" (baseline #{report.baseline.id} was benched with one prompt: no speedup per "
            "category)"
        )
    report.add("ok", "by category: " + "; ".join(cells) + note)
    return True


def _category_cell(name: str, pooled: Measured) -> str:
    """ "code accept 3.10, 412.5 tok/s": one category's probes, pooled."""
    accept, decode = ACCEPT.written(pooled) or DASH, DECODE.written(pooled) or DASH
    return f"{name} accept {accept}, {decode} {DECODE.unit}"
