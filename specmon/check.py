"""`specmon check`: triage in seconds, one finding per line, an exit code scripts can use
(the report, its exit codes and its JSON: `specmon.reports.check_report`).
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from specmon.analysis.ab_runs import StoredAb
from specmon.analysis.acceptance import draft_length, impossible_accept_length
from specmon.analysis.catalogue import Measured, figure
from specmon.analysis.comparison import Verdict
from specmon.analysis.conditions import conditions_of
from specmon.analysis.drafting import Drafting, drafts_otherwise
from specmon.analysis.gpus import gpu_verdict
from specmon.analysis.paired import why_not_interleaved
from specmon.analysis.pooled import Pooled, pool, pool_groups
from specmon.analysis.rates import server_accept_length
from specmon.analysis.representative import GAP_SHARE, TrafficGap, only_probes, traffic_gap
from specmon.analysis.sequential import DEFAULT_BUDGET_S, Look, SequentialRule
from specmon.analysis.validity import (
    LifetimeCheck,
    Validity,
    baseline_validity,
    rejudged_conditions,
)
from specmon.backend_facts import display_name
from specmon.errors import AuthFailed, MetricsDisabled, SourceError
from specmon.interleaved import Interleaving
from specmon.measure.bench import BenchInvalid
from specmon.model import (
    Protocol,
    RunFigures,
    ServerInfo,
    Snapshot,
    Telemetry,
)
from specmon.probe_prompts import DEFAULT_MAX_TOKENS, DEFAULT_PROMPT, ProbePrompt, Rotation
from specmon.reports.bench_text import cycle_text
from specmon.reports.check_report import (
    EXIT_DEGRADED,
    EXIT_UNREACHABLE,
    CheckReport,
    Design,
    Finding,
    Level,
)
from specmon.session.baselines import BaselineLookup
from specmon.session.drafting import DraftingTracker
from specmon.sources.backends import Connection
from specmon.whatif.advice import advise
from specmon.whatif.inputs import predict
from specmon.whatif.text import ab_lines, advisor_flags
from specmon.wording import (
    DASH,
    DRAFTING_OFF,
    counted,
    drafting_brief,
    partial_sums,
    verdict_text,
)

DECODE, ACCEPT = figure("decode tok/s"), figure("accept length")
SPEEDUP, BREAK_EVEN = figure("speedup"), figure("break-even accept length")
"""The catalogued figures the findings write (`analysis.catalogue`: their digits and units)."""

DEFAULT_CHECK_TOKENS = DEFAULT_MAX_TOKENS
"""The probe's size when no baseline sets it: the one default protocol's."""
CHECK_RULE = SequentialRule()
"""Looks after 3, 5 and 10 probes at 1 − 0.05/3 each (analysis/sequential.py)."""

BaselineFinder = Callable[[ServerInfo], BaselineLookup | Awaitable[BaselineLookup]]
"""The store's baseline for a server (awaited where the candidates' servers are read first)."""
ProbeRunner = Callable[[Protocol], Awaitable[Snapshot]]
"""Runs the probe as a one-run snapshot (`snapshot.take_snapshot`)."""
BaselineProber = Callable[[str, Protocol], Awaitable[Snapshot]]
"""Runs one probe of the baseline server at a URL, for interleaved probing."""


async def run_check(
    connection: Connection,
    url: str,
    *,
    run_probe: ProbeRunner,
    check_lifetime: Callable[[Snapshot], Awaitable[LifetimeCheck]],
    find_baseline: BaselineFinder = lambda _info: BaselineLookup(None),
    probe_tokens: int | None = None,
    max_age_s: float = 30 * 60,
    wall: Callable[[], float] = time.time,
    gpu: Callable[[], Awaitable[Telemetry]] | None = None,
    earlier: Callable[[], Sequence[Snapshot]] = lambda: (),
    budget_s: float = DEFAULT_BUDGET_S,
    clock: Callable[[], float] = time.monotonic,
    rule: SequentialRule = CHECK_RULE,
    prompts: Sequence[ProbePrompt] = (),
    find_ab: Callable[[ServerInfo], StoredAb | None] = lambda _info: None,
    probe_baseline: BaselineProber | None = None,
    interleave: bool | None = None,
) -> CheckReport:
    """Check one server: reachable, auth, version, metrics, speculation, a probe, the baseline.

    Args:
        connection: The target's connection (for identity and metrics; behind a router, its
            workers': `sources.workers.RouterConnection`).
        url: The target's base URL.
        run_probe: Takes the probe as a one-run snapshot under a protocol.
        check_lifetime: Whether a baseline's server restarted since it was taken.
        find_baseline: The store's baseline for a server by the one rule
            (`session.baselines.lookup_baseline`), or the nearest.
        probe_tokens: The user's probe size; a baseline's protocol wins (said on screen).
        max_age_s: Older baselines are stale.
        wall: Wall clock.
        gpu: A telemetry source's `read`: one line about the GPUs; it never changes the exit
            code (no GPU data, throttling or another process on a GPU are information).
        earlier: The store's snapshots, for the advisor (other draft lengths, acceptance
            falling since an earlier snapshot).
        budget_s: Seconds of probing to reach a verdict against a valid baseline: more probes
            are taken until the speedup's interval excludes 0 (`rule`) or this runs out.
        clock: Monotonic clock for the budget and the time to the verdict.
        rule: When to judge the speedup and at which level (analysis/sequential.py).
        prompts: `--probe-prompts`: one more probe per category, after the verdict's probes,
            reported per category (`pool_groups`); none without.
        find_ab: The store's latest A/B of a server's configuration (`session.ab_lookup`).
        probe_baseline: Probes the baseline server at its URL: against a valid baseline whose
            server is the process it measured, the two servers are probed alternately and the
            pairs judged (`specmon.interleaved`); None: the stored baseline's runs only.
        interleave: None: interleave where possible, else say why not and use the stored
            baseline; True: the same, the fallback a warning; False: never interleave.
    """
    report = CheckReport(url)
    try:
        info = await connection.info()
    except SourceError as exc:  # unreachable, no answer, auth refused, not SGLang, garbage
        report.add("fail", str(exc), EXIT_UNREACHABLE)
        return report
    report.server = info
    report.add("ok", f"reachable: {info.title} serving {info.model or '?'}")
    if connection.client.headers.get("authorization"):
        report.add("ok", "auth: the API key was accepted")
    await _check_metrics(connection, info, report)
    if info.speculative is None:
        report.add("ok", "speculation: off")
    else:
        report.add("ok", f"speculation: {info.speculative.describe()}")
    if gpu is not None:
        await _check_gpus(gpu, report)
    if info.speculative is not None and report.metrics is not None:
        run_probe = _DraftingWatch(connection, report, clock).around(run_probe)
    lookup = BaselineLookup(None)
    if info.speculative is not None:
        found = find_baseline(info)
        lookup = await found if inspect.isawaitable(found) else found
        report.choice = lookup
        if lookup.baseline is not None:
            report.add("info", _chosen_text(lookup))
    report.ab = find_ab(info) if info.speculative is not None else None
    if report.ab is not None:
        report.add("info", " — ".join(ab_lines(report.ab, wall(), url)))
    baseline = lookup.baseline
    tokens, prompt = probe_tokens or DEFAULT_CHECK_TOKENS, DEFAULT_PROMPT
    if baseline is not None:
        tokens, prompt = baseline.protocol.max_tokens, baseline.protocol.prompt
        if probe_tokens is not None and probe_tokens != tokens:
            report.add(
                "info",
                f"probe: {tokens} tokens, the protocol of baseline #{baseline.id} "
                f"(--probe-tokens {probe_tokens} set aside: runs compare only like for like)",
            )
    started = clock()
    protocol = Protocol(1, 0, tokens, 0.0, prompt)
    probe = await _probe(run_probe, protocol, report)
    if probe is None:
        return report
    figures = probe.runs[0]
    report.probe = figures
    report.probes = probe.runs
    report.add("ok", "probe: " + _describe_probe(figures))
    if info.speculative is None:
        return report
    if figures.accept_length is None:
        if not any("accept length withheld" in f.text for f in report.findings):
            report.add("warn", "speculation is on but the probe saw no verify steps", EXIT_DEGRADED)
        return report
    if baseline is None:
        report.add(
            "info",
            f"{lookup.why_none()}: run `specmon bench` against the same server without "
            "speculative flags to get speedup and break-even",
        )
    else:
        lifetime = await check_lifetime(baseline)
        why_not = _why_not_interleaved(interleave, probe_baseline, lifetime)
        validity = _validity(
            report, probe, baseline, lifetime, max_age_s, wall(), paired=why_not is None
        )
        if validity.valid:
            _say_design(report, baseline, why_not, interleave)
            if why_not is None:
                assert probe_baseline is not None
                look = await _interleave(
                    report, run_probe, probe_baseline, protocol, rule, budget_s, clock, started
                )
            else:
                base = pool(baseline.runs)
                sequence = _Probing(run_probe, protocol, base, rule, budget_s, clock, started)
                look = await sequence.until_decided(report, probe)
            if look is None:
                return report
            probe = replace(
                probe, runs=report.probes, protocol=replace(probe.protocol, runs=len(report.probes))
            )
            if why_not is not None:  # interleaved, both sides ran alike: not weighed (above)
                validity = _conditions_over_every_probe(report, baseline, validity)
            _judge(report, baseline, validity, look, budget_s, rule)
    if not await _say_traffic(run_probe, protocol, report):
        return report
    if prompts and not await _by_category(run_probe, prompts, tokens, report):
        return report
    _advise(report, probe, earlier())
    return report


CONDITIONS_DIFFER = "conditions differ from the baseline's: "

TRAFFIC_PROBES = 3
"""Probes enough to judge the gap to the traffic by their spread (one has none)."""


async def _say_traffic(run_probe: ProbeRunner, protocol: Protocol, report: CheckReport) -> bool:
    """The probes' accept length beside the server's over all its requests while they ran
    (`analysis.representative`); a named gap is a warning that leaves the exit code alone.

    One probe (no baseline to probe against) 10% off the traffic is not judged alone: more
    are taken, up to `TRAFFIC_PROBES`. False when one of them failed (said).
    """
    gap = _traffic_gap(report)
    while gap is not None and gap.probe_rel_se is None and abs(gap.share) > GAP_SHARE:
        if gap.only_probes:
            break  # the probes' own figure: no gap to judge
        if len(report.probes) >= TRAFFIC_PROBES:
            break
        probe = await _probe(run_probe, protocol, report)
        if probe is None:
            return False
        report.probes = (*report.probes, *probe.runs)
        gap = _traffic_gap(report)
    if gap is not None:
        report.traffic = gap
        said: Level = "warn" if gap.named else "info" if gap.only_probes else "ok"
        report.add(said, f"traffic: {gap.sentence}")
    return True


def _traffic_gap(report: CheckReport) -> TrafficGap | None:
    if report.metrics is None or report.metrics_after is None:
        return None
    traffic = server_accept_length(report.metrics, report.metrics_after)
    k = None if report.server is None else draft_length(report.server)
    if traffic is not None and impossible_accept_length(traffic.value, k) is not None:
        return None  # steps went uncounted: no gap is judged against a figure that cannot be
    alone = only_probes(report.metrics, report.metrics_after, report.probes)
    return traffic_gap(pool(report.probes), traffic, probes_alone=alone)


async def _by_category(
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
        probe = await _probe(run_probe, protocol, report)
        if probe is None:
            return False
        runs.setdefault(prompt.category, []).extend(probe.runs)
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


async def _probe(
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
            run = replace(run, accept_length=None)
        runs.append(run)
    return replace(snapshot, runs=tuple(runs))


def _why_not_interleaved(
    interleave: bool | None, probe_baseline: BaselineProber | None, lifetime: LifetimeCheck
) -> str | None:
    """Why the stored baseline's runs are used instead of probing its server alternately; None
    when it is probed alternately."""
    if interleave is False:
        return "--no-interleave"
    if probe_baseline is None:
        return "no way to probe the baseline server here"
    return why_not_interleaved(lifetime)


def _say_design(
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


async def _interleave(
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
        probe_now=lambda: _probe(run_probe, protocol, report),
        probe_base=lambda: _probe(base, protocol, report, "baseline server probe"),
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
class _Probing:
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
            probe = await _probe(self.run_probe, self.protocol, report)
            if probe is None:
                return None
            runs.extend(probe.runs)


@dataclass(slots=True)
class _DraftingWatch:
    """What the server drafts while `check` probes it: /metrics after every probe, counted as
    the dashboard counts them (`DraftingTracker`); its first figure and every switch a
    finding."""

    connection: Connection
    report: CheckReport
    clock: Callable[[], float]
    tracker: DraftingTracker = field(default_factory=lambda: DraftingTracker(math.inf))

    def __post_init__(self) -> None:
        assert self.report.metrics is not None  # the first scrape: the window's start
        self.tracker.add(self.clock(), self.report.metrics)

    def around(self, run_probe: ProbeRunner) -> ProbeRunner:
        """`run_probe`, followed by a scrape."""

        async def probe_and_scrape(protocol: Protocol) -> Snapshot:
            snapshot = await run_probe(protocol)
            await self.scrape()
            return snapshot

        return probe_and_scrape

    async def scrape(self) -> None:
        try:
            metrics = await self.connection.metrics()
        except SourceError:
            return  # said by the first scrape's finding if it persists; figures stay as they were
        self.report.metrics_after = metrics
        first = self.report.drafting is None
        switch = self.tracker.add(self.clock(), metrics)
        self.report.drafting = self.tracker.now(self.clock(), math.inf)
        if switch is not None:
            self.report.switches.append(switch.text)
            self.report.add("info", switch.text)
        drafting = self.report.drafting
        if first and drafting is not None:
            self.report.add(
                "info" if drafting.off else "ok",
                _describe_drafting(drafting, self.report.server, metrics.num_running_reqs),
            )


def _describe_drafting(drafting: Drafting, info: ServerInfo | None, running: float | None) -> str:
    """ "drafting now: k 3.0 100% (configured k 3; server gauges, 16 running)"."""
    configured = draft_length(info) if info is not None else None
    brief = drafting_brief(drafting.draft_length, drafting.duty_cycle, drafting.off)
    parts = [
        f"configured k {configured}" if configured is not None else "",
        f"server {drafting.source}",
        f"{running:.0f} running" if running is not None else "",
    ]
    text = f"drafting now: {brief} ({', '.join(p for p in parts if p)})"
    return text + (f" — {DRAFTING_OFF}" if drafting.off else "")


def _advise(report: CheckReport, probe: Snapshot, earlier: Sequence[Snapshot]) -> None:
    """The advisor's findings (`whatif.advice`), just before the verdict (or the line saying
    there is no baseline), which stays the last line; they never change the exit code."""
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


async def _check_metrics(connection: Connection, info: ServerInfo, report: CheckReport) -> None:
    try:
        report.metrics = await connection.metrics()
    except MetricsDisabled as exc:
        report.add("warn", str(exc), EXIT_DEGRADED)
    except SourceError as exc:
        report.add("warn", f"metrics unreadable: {exc}", EXIT_DEGRADED)
    else:
        kind = display_name(info.backend)
        series = f"{len(report.metrics.families)} {kind} series names"
        workers = report.metrics.workers
        if not workers:
            report.add("ok", f"metrics: on ({series})")
            return
        up = sum(w.up for w in workers)
        report.add("ok", f"metrics: on, summed over {up} of {len(workers)} workers ({series})")
        partial = partial_sums(workers)
        if partial is not None:
            report.add("warn", f"server figures {partial}", EXIT_DEGRADED)


async def _check_gpus(read: Callable[[], Awaitable[Telemetry]], report: CheckReport) -> None:
    try:
        telemetry = await read()
    except SourceError as exc:
        report.add("warn", f"GPUs: {exc}")
        return
    verdict = gpu_verdict(telemetry)
    report.add(verdict.level, f"GPUs: {verdict.text}")


def _describe_probe(f: RunFigures) -> str:
    parts = [f"{f.completion_tokens} tokens", f"TTFT {f.ttft_ms:.0f} ms"]
    if f.decode_tok_s is not None:
        parts.append(f"decode {f.decode_tok_s:.1f} tok/s")
    if f.accept_length is not None:
        parts.append(f"accept {f.accept_length:.2f}")
    if f.cycle_ms is not None:
        parts.append(cycle_text(f.cycle_ms, f.cycle_source))
    return ", ".join(parts)


def _validity(
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
    validity = baseline_validity(
        baseline,
        probe.server,
        now=now,
        lifetime=lifetime,
        max_age_s=max_age_s,
        protocol=probe.protocol,
        gpu=probe.gpu,
        conditions=conditions_of(run.conditions for run in probe.runs),
    )
    report.validity = validity
    if not validity.valid:
        report.add(
            "warn",
            f"{_baseline_tag(baseline)} is stale: " + "; ".join(validity.reasons),
            EXIT_DEGRADED,
        )
    for warning in validity.warnings:
        report.add("info", f"GPUs differ from the baseline's: {warning}")
    for what in validity.conditions:
        if paired and validity.valid:
            report.add(
                "info",
                f"conditions differ from the stored baseline's: {what} — not weighed: both "
                "servers are probed now, alternately",
            )
        else:
            report.add("warn", f"{CONDITIONS_DIFFER}{what}", EXIT_DEGRADED)
    return validity


def _conditions_over_every_probe(
    report: CheckReport, baseline: Snapshot, validity: Validity
) -> Validity:
    """The conditions judged again over every probe the verdict rests on, not the first alone
    (the load may change while check probes): the first probe's lines give way to these."""
    later = rejudged_conditions(
        validity, baseline, conditions_of(run.conditions for run in report.probes)
    )
    if later.conditions != validity.conditions:
        said = {f"{CONDITIONS_DIFFER}{what}" for what in validity.conditions}
        report.findings = [f for f in report.findings if f.text not in said]
        for what in later.conditions:
            report.add("warn", f"{CONDITIONS_DIFFER}{what}", EXIT_DEGRADED)
    report.validity = later
    return later


def _chosen_text(lookup: BaselineLookup) -> str:
    """ "baseline #7 (http://…): latest valid of the configuration and protocol; 3 considered;
    next: #4 (http://…) was taken with concurrency 16, the probe uses 1"."""
    assert lookup.baseline is not None
    base = lookup.baseline
    return f"baseline #{base.id} ({base.url}): {lookup.described()}"


def _baseline_tag(baseline: Snapshot) -> str:
    base = Measured(pool(baseline.runs))
    base_text = DECODE.shown(base) if DECODE.get(base) else "no decode figure"
    return f"baseline #{baseline.id} ({baseline.url}, {base_text})"


def _judge(
    report: CheckReport,
    baseline: Snapshot,
    validity: Validity,
    look: Look,
    budget_s: float,
    rule: SequentialRule,
) -> None:
    """The speedup line: never a clean ✓ unless the baseline is confirmed to apply; it names
    the design that gave it (the stored baseline, or its server probed alternately)."""
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
        tag = _baseline_tag(baseline)
        head, unit = f"vs {tag}", "probe"
    if comparison is None:
        report.add("warn", f"{head}: no decode speed to compare", EXIT_DEGRADED)
        return
    measured = Measured(report.compared, comparison)
    text = (
        f"{head}: now {DECODE.shown(measured)}, speedup {SPEEDUP.shown(measured)} "
        f"({comparison.speedup.level:.1%} interval)"
    )
    accept, break_even = ACCEPT.written(measured), BREAK_EVEN.written(measured)
    if accept is not None and break_even is not None:
        text += f", accept {accept} vs break-even {break_even}"
    took = report.verdict_after_s or 0.0
    probes = f"{counted(look.probes, unit)} in {took:.1f} s"
    if comparison.verdict == Verdict.WITHIN_NOISE:
        probes += ", the cap" if look.probes >= rule.max_probes else f", the {budget_s:g} s budget"
        if not paired:
            probes += _noisy_baseline(pool(baseline.runs), pool(report.probes))
    text += f" — {verdict_text(comparison)} after {probes}"
    if validity.unverified:
        unverified = "; ".join(validity.unverified)
        report.add("warn", f"{text}; UNVERIFIED: {unverified}", EXIT_DEGRADED)
    elif comparison.verdict == Verdict.LOSING:
        report.add("warn", text, EXIT_DEGRADED)
    elif comparison.verdict == Verdict.WITHIN_NOISE:
        report.add("info", text)
    else:
        report.add("ok", text)


def _noisy_baseline(base: Pooled, now: Pooled) -> str:
    """What to do when the baseline's own noise is most of the interval: more probes cannot
    narrow it (an H200 baseline of 3 runs with an 11.7% standard error left a 1.9× speedup
    undecided)."""
    if base.rel_se is None or (now.rel_se is not None and now.rel_se >= base.rel_se):
        return ""
    return (
        f"; most of the interval is the baseline's own noise ({base.runs} runs, "
        f"±{base.rel_se:.1%} standard error): bench it again with more --runs"
    )
