"""`run_check`: the order of `check`'s steps, each done by a module of this package (the report,
its exit codes and its JSON: `specmon.reports.check_report`)."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from specmon.analysis.ab_runs import StoredAb
from specmon.analysis.pooled import pool
from specmon.analysis.sequential import DEFAULT_BUDGET_S, SequentialRule
from specmon.analysis.validity import LifetimeCheck
from specmon.check.advice import say_advice
from specmon.check.drafting_watch import DraftingWatch
from specmon.check.judging import (
    NO_DECODE,
    chosen_text,
    conditions_over_every_probe,
    judge,
    stale_text,
    validity,
)
from specmon.check.probing import (
    BaselineProber,
    ProbeRunner,
    Probing,
    probe,
    probe_alternately,
    say_design,
    why_not_paired,
)
from specmon.check.reading import check_gpus, check_metrics, describe_probe
from specmon.check.steps import ProbePlan, Quiet, Steps, most_probes
from specmon.check.traffic import by_category, say_traffic
from specmon.errors import SourceError
from specmon.model import Protocol, ServerInfo, Snapshot, Telemetry
from specmon.probe_prompts import DEFAULT_MAX_TOKENS, DEFAULT_PROMPT, ProbePrompt, Rotation
from specmon.reports.check_report import EXIT_DEGRADED, EXIT_UNREACHABLE, CheckReport
from specmon.session.baselines import BaselineLookup
from specmon.sources.backends import Connection
from specmon.whatif.text import ab_lines

DEFAULT_CHECK_TOKENS = DEFAULT_MAX_TOKENS
"""The probe's size when no baseline sets it: the one default protocol's."""
CHECK_RULE = SequentialRule()
"""Looks after 3, 5 and 10 probes at 1 − 0.05/3 each (analysis/sequential.py)."""

BaselineFinder = Callable[[ServerInfo], BaselineLookup | Awaitable[BaselineLookup]]
"""The store's baseline for a server (awaited where the candidates' servers are read first):
the command's is its session's choice (`CheckSession.first_info`)."""


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
    steps: Steps | None = None,
) -> CheckReport:
    """Check one server: reachable, auth, version, metrics, speculation, a probe, the baseline.

    Args:
        connection: The target's connection (for identity and metrics; behind a router, its
            workers': `sources.workers.RouterConnection`).
        url: The target's base URL.
        run_probe: Takes the probe as a one-run snapshot under a protocol.
        check_lifetime: Whether a baseline's server restarted since it was taken (the
            command's: as its session read it for the choice, `CheckSession.baseline_lifetime`).
        find_baseline: The store's baseline for a server by the one rule, or the nearest: the
            command's is the choice of its session, handed the info read here
            (`CheckSession.first_info`).
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
            pairs judged (`check.interleaving`); None: the stored baseline's runs only.
        interleave: None: interleave where possible, else say why not and use the stored
            baseline; True: the same, the fallback a warning; False: never interleave.
        steps: Told each step as it is reached (the command's progress lines); None: quiet.
    """
    said: Steps = steps if steps is not None else Quiet()
    report = CheckReport(url)
    try:
        info = await connection.info()
    except SourceError as exc:  # unreachable, no answer, auth refused, not SGLang, garbage
        report.add("fail", str(exc), EXIT_UNREACHABLE)
        said.unreachable(str(exc))
        return report
    report.server = info
    said.reached(info)
    report.add("ok", f"reachable: {info.title} serving {info.model or '?'}")
    if connection.client.headers.get("authorization"):
        report.add("ok", "auth: the API key was accepted")
    await check_metrics(connection, info, report)
    if info.speculative is None:
        report.add("ok", "speculation: off")
    else:
        report.add("ok", f"speculation: {info.speculative.describe()}")
    if gpu is not None:
        await check_gpus(gpu, report)
    if info.speculative is not None and report.metrics is not None:
        run_probe = DraftingWatch(connection, report, clock).around(run_probe)
    lookup = BaselineLookup(None)
    if info.speculative is not None:
        found = find_baseline(info)
        lookup = await found if inspect.isawaitable(found) else found
        said.found(lookup)
        report.choice = lookup
        if lookup.baseline is not None:
            report.add("info", chosen_text(lookup))
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

    def plan(
        verdict: int, most_baseline: int = 0, budget_left: Callable[[], float] | None = None
    ) -> ProbePlan:
        """The most probes, `verdict` of them to the verdict (`check.steps`)."""
        if info.speculative is None:
            return ProbePlan(1)
        categories = len(Rotation(prompts).categories) if prompts else 0
        most = most_probes(
            verdict=verdict, traffic=report.metrics is not None, categories=categories
        )
        return ProbePlan(most, most_baseline, budget_left)

    said.plan(plan(rule.max_probes if baseline is not None else 1))
    started = clock()
    protocol = Protocol(1, 0, tokens, 0.0, prompt)
    first = await probe(run_probe, protocol, report)
    if first is None:
        return report
    figures = first.runs[0]
    report.probe = figures
    report.probes = first.runs
    report.add("ok", "probe: " + describe_probe(figures))
    if info.speculative is None:
        return report
    if figures.accept_length is None:
        if not report.withheld:  # else said already: the accept length it read was impossible
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
        why_not = why_not_paired(interleave, probe_baseline, lifetime)
        judged = validity(
            report, first, baseline, lifetime, max_age_s, wall(), paired=why_not is None
        )
        if not judged.valid:
            said.plan(plan(1))
            said.concluded(f"no verdict: {stale_text(baseline, judged)}")
        else:
            say_design(report, baseline, why_not, interleave)
            said.plan(
                plan(
                    rule.max_probes,
                    most_baseline=rule.max_probes if why_not is None else 0,
                    budget_left=lambda: started + budget_s - clock(),
                )
            )
            if why_not is None:
                assert probe_baseline is not None
                look = await probe_alternately(
                    report, run_probe, probe_baseline, protocol, rule, budget_s, clock, started
                )
            else:
                base = pool(baseline.runs)
                sequence = Probing(run_probe, protocol, base, rule, budget_s, clock, started)
                look = await sequence.until_decided(report, first)
            if look is None:
                return report
            first = replace(
                first, runs=report.probes, protocol=replace(first.protocol, runs=len(report.probes))
            )
            if why_not is not None:  # interleaved, both sides ran alike: not weighed (above)
                judged = conditions_over_every_probe(report, baseline, judged)
            words = judge(report, baseline, judged, look, budget_s, rule)
            said.plan(plan(len(report.probes), most_baseline=len(report.baseline_probes)))
            said.concluded(words.brief if words is not None else f"no verdict: {NO_DECODE}")
    if not await say_traffic(run_probe, protocol, report):
        return report
    if prompts and not await by_category(run_probe, prompts, tokens, report):
        return report
    say_advice(report, first, earlier())
    return report
