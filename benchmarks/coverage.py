"""Coverage in simulation: how often the 95% intervals of `check` and `ab` hold the true speedup,
how often `check`'s sequential rule calls a server with no speedup winning or losing, and how
often the what-if's interval holds the true decode speed at another draft length.

Pure Python over the real analysis functions (`pool`, `compare`, `round_spread`,
`SequentialRule`): runs are made to measure, each run's decode tok/s the server's true speed
times exp(N(0, σ_run)), σ_run each side's own (a plain server's runs vary ~0.4%, a speculative
one's ~3.5%; "steady" is a baseline with no spread at all), and, for `ab`, each launch of a
server its own speed times exp(N(0, σ_launch)) (a server's speed moves between launches: two
launches of one plain SGLang ran 339 and 203 tok/s on an H200). The true speedup is `--speedup`.

    python benchmarks/coverage.py                      # 2,000 cases each, seed 1
    python benchmarks/coverage.py --cases 600 --json   # what tests/analysis/test_coverage.py runs

Prints a Markdown table for docs/metrics.md ("Coverage in simulation").
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from specmon.analysis.acceptance import from_histogram
from specmon.analysis.comparison import Speedup, Verdict, compare, round_spread
from specmon.analysis.cycle_model import CyclePoint, fit_cycle
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.sequential import SequentialRule
from specmon.model import RunFigures
from specmon.whatif.prediction import what_if

BASE_TOK_S = 300.0
TOKENS = 200
PLAIN_SIGMA = 0.004
"""A plain server's runs vary ~0.4% from one to the next (`analysis.comparison.PLAIN_SPREAD`)."""
SPECULATIVE_SIGMA = 0.035
"""A speculative server's ~3.5% (the acceptance of each run's text moves its speed)."""


def made_run(tok_s: float) -> RunFigures:
    """A run of `TOKENS` decode tokens at `tok_s` (what a probe of the protocol measures)."""
    seconds = TOKENS / tok_s
    return RunFigures(
        completion_tokens=TOKENS + 1,
        prompt_tokens=20,
        ttft_ms=30.0,
        e2e_s=seconds + 0.03,
        e2e_tok_s=(TOKENS + 1) / (seconds + 0.03),
        decode_tok_s=tok_s,
        accept_length=None,
        server_accept_length=None,
        verify_ct=None,
        cycle_ms=None,
        cycle_ms_p50=None,
        cycle_ms_p95=None,
        decode_tokens=TOKENS,
        decode_s=seconds,
        decode_steps=None,
    )


def runs_at(rng: random.Random, tok_s: float, n: int, sigma: float) -> list[RunFigures]:
    return [made_run(tok_s * math.exp(rng.gauss(0.0, sigma))) for _ in range(n)]


def covers(gain: Speedup | None, truth: float) -> bool:
    return (
        gain is not None
        and gain.low is not None
        and gain.high is not None
        and (gain.low <= truth <= gain.high)
    )


@dataclass(frozen=True, slots=True)
class Row:
    """One simulated setting and what its intervals did."""

    what: str
    setting: str
    cases: int
    coverage: float
    """Share of cases whose interval held the true speedup."""
    called: float | None = None
    """Share called winning or losing (the false verdict rate where the truth is 0)."""
    winning: float | None = None
    median_probes: float | None = None


def spread_text(sigma: float) -> str:
    """ "steady" for no spread, else "σ 0.4%"."""
    return "steady" if sigma == 0 else f"σ {sigma:.1%}"


def fixed_check(
    rng: random.Random,
    cases: int,
    base_runs: int,
    probes: int,
    speedup: float,
    base_sigma: float,
    probe_sigma: float,
) -> Row:
    """`compare` of `probes` probe runs against a baseline of `base_runs` runs, 95%; each side
    with its own run-to-run spread."""
    hits = called = 0
    for _ in range(cases):
        base = pool(runs_at(rng, BASE_TOK_S, base_runs, base_sigma))
        now = pool(runs_at(rng, BASE_TOK_S * (1 + speedup), probes, probe_sigma))
        found = compare(now, base)
        hits += found is not None and covers(found.speedup, speedup)
        called += found is not None and found.verdict != Verdict.WITHIN_NOISE
    setting = (
        f"baseline {base_runs} runs {spread_text(base_sigma)}, "
        f"{probes} probe{'s' * (probes > 1)} σ {probe_sigma:.1%}"
    )
    return Row("check, 95% interval", setting, cases, hits / cases, called / cases)


def sequential_check(
    rng: random.Random,
    cases: int,
    base_runs: int,
    speedup: float,
    base_sigma: float,
    probe_sigma: float,
    probe_s: float,
    budget_s: float,
) -> Row:
    """`check`'s rule: a probe every `probe_s` simulated seconds until it stops."""
    rule = SequentialRule()
    hits = called = winning = 0
    probes_taken = []
    for _ in range(cases):
        base = pool(runs_at(rng, BASE_TOK_S, base_runs, base_sigma))
        runs: list[RunFigures] = []
        while True:
            runs += runs_at(rng, BASE_TOK_S * (1 + speedup), 1, probe_sigma)
            look = rule.step(runs, base, probe_s * len(runs), budget_s)
            if look.done:
                break
        assert look.comparison is not None
        probes_taken.append(len(runs))
        hits += covers(look.comparison.speedup, speedup)
        called += look.comparison.verdict != Verdict.WITHIN_NOISE
        winning += look.comparison.verdict == Verdict.WINNING
    setting = (
        f"true {speedup:+.0%}, baseline {base_runs} runs {spread_text(base_sigma)}, "
        f"probes σ {probe_sigma:.1%}, {probe_s:g} s a probe, budget {budget_s:g} s"
    )
    return Row(
        f"check, sequential ({rule.level:.1%} looks)",
        setting,
        cases,
        hits / cases,
        called / cases,
        winning / cases,
        statistics.median(probes_taken),
    )


def ab_rounds(
    rng: random.Random,
    cases: int,
    rounds: int,
    runs: int,
    speedup: float,
    base_sigma: float,
    spec_sigma: float,
    launch_sigma: float,
) -> Row:
    """`ab`'s comparison of `rounds` rounds, each launching both servers anew."""
    hits = 0
    for _ in range(cases):
        pairs: list[tuple[Pooled, Pooled]] = []
        spec_runs: list[RunFigures] = []
        base_runs: list[RunFigures] = []
        for _ in range(rounds):
            base_speed = BASE_TOK_S * math.exp(rng.gauss(0.0, launch_sigma))
            spec_speed = BASE_TOK_S * (1 + speedup) * math.exp(rng.gauss(0.0, launch_sigma))
            base_round = runs_at(rng, base_speed, runs, base_sigma)
            spec_round = runs_at(rng, spec_speed, runs, spec_sigma)
            pairs.append((pool(spec_round), pool(base_round)))
            spec_runs += spec_round
            base_runs += base_round
        found = compare(pool(spec_runs), pool(base_runs), round_spread(pairs))
        hits += found is not None and covers(found.speedup, speedup)
    setting = (
        f"{rounds} rounds × {runs} runs, σ run {base_sigma:.1%} plain, {spec_sigma:.1%} "
        f"speculative, σ launch {launch_sigma:.0%}"
    )
    return Row("ab, 95% interval", setting, cases, hits / cases)


RATES = (0.8, 0.6, 0.45, 0.3375, 0.253125)
"""True acceptance by position: a_0 = 0.8, then each position kept with 3/4 the last's (what
the what-if extrapolates past the measured positions, r = a_2 / a_1)."""


def what_if_check(
    rng: random.Random, cases: int, draft: int, sigma: float, base_ms: float = 10.0
) -> Row:
    """`what_if` from runs at K = 3 (draft model, one cycle, a baseline) predicting `draft`:
    the true T(k) = T₀ + f·D + (1 − f)·D·k/K, D = T(K) − T₀, f uniform in [0, 1] (anywhere
    between the per-draft and fixed extremes the model spans), acceptance independent by
    position (`RATES`)."""
    k_now, cycle_now = 3, 16.0
    steps_total = 1000
    reached = [round(steps_total * r) for r in RATES[:k_now]]
    histogram = [steps_total - reached[0]]
    histogram += [reached[i] - reached[i + 1] for i in range(k_now - 1)] + [reached[-1]]
    positions = from_histogram(histogram)
    assert positions is not None
    accept = 1 + sum(RATES[:k_now])
    hits = 0
    for _ in range(cases):
        f = rng.random()
        extra = cycle_now - base_ms
        true_cycle = base_ms + f * extra + (1 - f) * extra * draft / k_now
        truth = 1000 * (1 + sum(RATES[:draft])) / true_cycle
        base = pool(runs_at(rng, 1000 / base_ms, 5, sigma))
        runs = [
            replace(run, accept_length=accept, decode_steps=TOKENS / accept)
            for run in runs_at(rng, 1000 * accept / cycle_now, 3, sigma)
        ]
        now = pool(runs)
        assert now.cycle_ms is not None
        cycle = fit_cycle(
            [CyclePoint(k_now, now.cycle_ms, "now")], base.ms_per_token, model_drafts=True
        )
        assert cycle is not None
        found = what_if(now, positions, k_now, cycle, base)
        assert found is not None
        p = found.at(draft)
        assert p is not None and p.decode_low is not None and p.decode_high is not None
        hits += p.decode_low <= truth <= p.decode_high
    setting = f"k = {draft} from runs at k = 3 (3 runs, σ {sigma:.0%}), true T(k) anywhere in range"
    return Row("what-if, 95% interval", setting, cases, hits / cases)


def simulate(cases: int, seed: int, speedup: float) -> list[Row]:
    """Every setting of the table, each with `cases` cases from its own seeded stream."""
    rows = []
    plain, spec = PLAIN_SIGMA, SPECULATIVE_SIGMA
    settings = [
        # One, two and three probes against a steady (zero-spread) baseline: the probe's own
        # spread is all there is (before the priors it printed "+25.52% [+25.50%, +25.53%]").
        lambda rng: fixed_check(rng, cases, 5, 1, speedup, 0.0, spec),
        lambda rng: fixed_check(rng, cases, 5, 2, speedup, 0.0, spec),
        lambda rng: fixed_check(rng, cases, 5, 3, speedup, 0.0, spec),
        lambda rng: fixed_check(rng, cases, 5, 1, speedup, plain, spec),
        lambda rng: fixed_check(rng, cases, 3, 1, speedup, plain, spec),
        lambda rng: fixed_check(rng, cases, 1, 1, speedup, plain, spec),
        lambda rng: fixed_check(rng, cases, 5, 5, speedup, plain, spec),
        lambda rng: fixed_check(rng, cases, 5, 10, speedup, plain, 0.05),
        # A server twice as noisy as the prior says: what one probe cannot know.
        lambda rng: fixed_check(rng, cases, 5, 1, speedup, plain, 2 * spec),
        lambda rng: fixed_check(rng, cases, 5, 3, speedup, plain, 2 * spec),
        lambda rng: fixed_check(rng, cases, 5, 10, speedup, plain, 2 * spec),
        lambda rng: sequential_check(rng, cases, 5, 0.0, plain, spec, 1.0, 30.0),
        lambda rng: sequential_check(rng, cases, 3, 0.0, plain, 0.05, 4.0, 30.0),
        # `check --budget 10` where one probe fits: its only look is after one probe.
        lambda rng: sequential_check(rng, cases, 5, 0.0, 0.0, spec, 6.0, 10.0),
        lambda rng: sequential_check(rng, cases, 5, 0.25, plain, spec, 1.0, 30.0),
        lambda rng: ab_rounds(rng, cases, 2, 3, speedup, plain, spec, 0.0),
        lambda rng: ab_rounds(rng, cases, 2, 3, speedup, plain, spec, 0.15),
        lambda rng: ab_rounds(rng, cases, 3, 3, speedup, plain, spec, 0.0),
        lambda rng: ab_rounds(rng, cases, 3, 3, speedup, plain, spec, 0.15),
        lambda rng: what_if_check(rng, cases, 1, 0.02),
        lambda rng: what_if_check(rng, cases, 5, 0.02),
    ]
    for index, run in enumerate(settings):
        rows.append(run(random.Random(seed * 1000 + index)))
    return rows


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| interval | setting | cases | coverage | called winning or losing | winning | "
        "median probes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        called = "" if r.called is None else f"{r.called:.1%}"
        winning = "" if r.winning is None else f"{r.winning:.1%}"
        probes = "" if r.median_probes is None else f"{r.median_probes:g}"
        lines.append(
            f"| {r.what} | {r.setting} | {r.cases} | {r.coverage:.1%} | {called} | {winning} | "
            f"{probes} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2000, help="cases per setting (2000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speedup", type=float, default=0.25, help="true speedup (0.25)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = simulate(args.cases, args.seed, args.speedup)
    print(json.dumps([asdict(r) for r in rows], indent=2) if args.json else table(rows))


if __name__ == "__main__":
    main()
