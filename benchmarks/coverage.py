"""Coverage in simulation: how often the 95% intervals of `check` and `ab` hold the true speedup,
how often `check`'s sequential rule calls a server with no speedup winning or losing, and how
often the what-if's interval holds the true decode speed at another draft length.

Pure Python over the real analysis functions (`pool`, `compare`, `round_spread`,
`SequentialRule`): runs are made to measure, each run's decode tok/s the server's true speed
times exp(N(0, σ_run)), and, for `ab`, each launch of a server its own speed times
exp(N(0, σ_launch)) (a server's speed moves between launches: two launches of one plain SGLang
ran 339 and 203 tok/s on an H200). The true speedup is `--speedup`.

    python benchmarks/coverage.py                      # 2,000 cases each, seed 1
    python benchmarks/coverage.py --cases 300 --json   # what tests/analysis/test_coverage.py runs

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


def fixed_check(
    rng: random.Random, cases: int, base_runs: int, probes: int, speedup: float, sigma: float
) -> Row:
    """`compare` of `probes` probe runs against a baseline of `base_runs` runs, 95%."""
    hits = 0
    for _ in range(cases):
        base = pool(runs_at(rng, BASE_TOK_S, base_runs, sigma))
        now = pool(runs_at(rng, BASE_TOK_S * (1 + speedup), probes, sigma))
        found = compare(now, base)
        hits += found is not None and covers(found.speedup, speedup)
    setting = f"baseline {base_runs} runs, {probes} probe{'s' * (probes > 1)}, σ {sigma:.0%}"
    return Row("check, 95% interval", setting, cases, hits / cases)


def sequential_check(
    rng: random.Random,
    cases: int,
    base_runs: int,
    speedup: float,
    sigma: float,
    probe_s: float,
    budget_s: float,
) -> Row:
    """`check`'s rule: a probe every `probe_s` simulated seconds until it stops."""
    rule = SequentialRule()
    hits = called = winning = 0
    probes_taken = []
    for _ in range(cases):
        base = pool(runs_at(rng, BASE_TOK_S, base_runs, sigma))
        runs: list[RunFigures] = []
        while True:
            runs += runs_at(rng, BASE_TOK_S * (1 + speedup), 1, sigma)
            look = rule.step(runs, base, probe_s * len(runs), budget_s)
            if look.done:
                break
        assert look.comparison is not None
        probes_taken.append(len(runs))
        hits += covers(look.comparison.speedup, speedup)
        called += look.comparison.verdict != Verdict.WITHIN_NOISE
        winning += look.comparison.verdict == Verdict.WINNING
    setting = (
        f"true {speedup:+.0%}, baseline {base_runs} runs, σ {sigma:.0%}, "
        f"{probe_s:g} s a probe, budget {budget_s:g} s"
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
    sigma: float,
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
            base_round = runs_at(rng, base_speed, runs, sigma)
            spec_round = runs_at(rng, spec_speed, runs, sigma)
            pairs.append((pool(spec_round), pool(base_round)))
            spec_runs += spec_round
            base_runs += base_round
        found = compare(pool(spec_runs), pool(base_runs), round_spread(pairs))
        hits += found is not None and covers(found.speedup, speedup)
    setting = f"{rounds} rounds × {runs} runs, σ run {sigma:.0%}, σ launch {launch_sigma:.0%}"
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
    settings = [
        lambda rng: fixed_check(rng, cases, 5, 1, speedup, 0.02),
        lambda rng: fixed_check(rng, cases, 3, 1, speedup, 0.02),
        lambda rng: fixed_check(rng, cases, 5, 3, speedup, 0.02),
        lambda rng: fixed_check(rng, cases, 5, 10, speedup, 0.05),
        lambda rng: sequential_check(rng, cases, 5, 0.0, 0.02, 1.0, 30.0),
        lambda rng: sequential_check(rng, cases, 3, 0.0, 0.05, 4.0, 30.0),
        lambda rng: sequential_check(rng, cases, 5, 0.25, 0.02, 1.0, 30.0),
        lambda rng: ab_rounds(rng, cases, 2, 3, speedup, 0.02, 0.0),
        lambda rng: ab_rounds(rng, cases, 2, 3, speedup, 0.02, 0.15),
        lambda rng: ab_rounds(rng, cases, 3, 3, speedup, 0.02, 0.0),
        lambda rng: ab_rounds(rng, cases, 3, 3, speedup, 0.02, 0.15),
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
