"""Speculation under load: a managed A/B's figures at each concurrency and the crossover.

Each level pools every round's runs of one side (`analysis.pooled`: the one statistic), compares
them with `analysis.comparison.compare` (the one speedup, interval and verdict) and judges the
pair with `snapshot_validity`; nothing here is computed a second way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specmon.analysis.comparison import Comparison, RoundSpread, Verdict, compare, round_spread
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.validity import Validity, relaunched_for_speculation, snapshot_validity
from specmon.model import RunFigures, Snapshot


def throughput(runs: Sequence[RunFigures], concurrency: int) -> float | None:
    """Total tok/s of runs taken `concurrency` streams at a time, in the order they ran.

    Σ tokens / Σ batch time, where a batch's time is its longest stream's (all of a batch's
    streams are sent together); None without runs or time.
    """
    tokens = seconds = 0.0
    for start in range(0, len(runs), concurrency):
        batch = runs[start : start + concurrency]
        tokens += sum(run.completion_tokens for run in batch)
        seconds += max(run.e2e_s for run in batch)
    return tokens / seconds if seconds > 0 else None


@dataclass(frozen=True, slots=True)
class Level:
    """One concurrency of a managed A/B."""

    concurrency: int
    baseline: Pooled
    speculative: Pooled
    comparison: Comparison | None
    """None when a side has no decode tok/s."""
    spread: RoundSpread | None
    """The rounds' speedups the comparison's interval comes from (with one round, the runs'
    noise); None when no round compares."""
    validity: tuple[Validity, ...]
    """Each round's pair: baseline against speculative."""
    baseline_throughput: float | None
    speculative_throughput: float | None

    @property
    def valid(self) -> bool:
        """Every pair applies."""
        return all(v.valid for v in self.validity)


def level(
    concurrency: int,
    pairs: Sequence[tuple[Snapshot, Snapshot]],
    *,
    max_age_s: float,
) -> Level:
    """The figures of one concurrency from its (baseline, speculative) snapshot pairs, each pair
    judged at its own time (`snapshot_validity`): however long the A/B ran."""
    base_runs = [run for base, _ in pairs for run in base.runs]
    spec_runs = [run for _, spec in pairs for run in spec.runs]
    base, spec = pool(base_runs), pool(spec_runs)
    # Each round relaunched both servers: the rounds' own speedups, launches and runs alike,
    # make the interval.
    spread = round_spread([(pool(s.runs), pool(b.runs)) for b, s in pairs])
    # Each baseline server was stopped for its speculative one by design: its lifetime is over.
    validity = tuple(
        snapshot_validity(b, s, max_age_s=max_age_s, lifetime=relaunched_for_speculation())
        for b, s in pairs
    )
    return Level(
        concurrency,
        base,
        spec,
        compare(spec, base, spread),
        spread,
        validity,
        throughput(base_runs, concurrency),
        throughput(spec_runs, concurrency),
    )


@dataclass(frozen=True, slots=True)
class Crossover:
    """Where speculation stops paying, over the levels measured."""

    pays_up_to: int | None
    """The highest concurrency at which it wins; None when it wins at none."""
    stops_at: int | None
    """The first concurrency above `pays_up_to` (the lowest one when it wins at none); None
    when it wins at the highest level measured."""
    verdict: Verdict | None
    """What `stops_at` says; None without `stops_at` or without figures there."""
    exceptions: tuple[int, ...] = ()
    """Levels below `pays_up_to` at which it does not win (noise at one stream, say)."""


def _verdict(lv: Level) -> Verdict | None:
    return lv.comparison.verdict if lv.comparison is not None else None


def crossover(levels: Sequence[Level]) -> Crossover:
    """The load above which speculation stops paying: above the highest level that wins."""
    ordered = sorted(levels, key=lambda lv: lv.concurrency)
    wins = [lv.concurrency for lv in ordered if _verdict(lv) == Verdict.WINNING]
    top = wins[-1] if wins else None
    above = [lv for lv in ordered if top is None or lv.concurrency > top]
    stop = above[0] if above else None
    exceptions = tuple(
        lv.concurrency
        for lv in ordered
        if top is not None and lv.concurrency < top and _verdict(lv) != Verdict.WINNING
    )
    return Crossover(
        top,
        stop.concurrency if stop else None,
        _verdict(stop) if stop else None,
        exceptions,
    )


@dataclass(frozen=True, slots=True)
class Best:
    """The configuration of a sweep that did best at one concurrency."""

    concurrency: int
    config: str
    level: Level


_VERDICT_RANK = {Verdict.WINNING: 2, Verdict.WITHIN_NOISE: 1, Verdict.LOSING: 0}
"""A configuration shown to win ranks above one that may not, whatever their point estimates."""


def best_per_concurrency(per_config: Sequence[tuple[str, Sequence[Level]]]) -> list[Best]:
    """At each concurrency, the best configuration among those whose pairs are valid: a winning
    one above any within noise, and those above a losing one; the highest speedup among equals
    (all share the round's baseline, so it is also the fastest)."""
    out: dict[int, tuple[tuple[int, float], Best]] = {}
    for config, found in per_config:
        for lv in found:
            c = lv.comparison
            if c is None or not lv.valid:
                continue
            rank = (_VERDICT_RANK[c.verdict], c.speedup.value)
            held = out.get(lv.concurrency)
            if held is None or rank > held[0]:
                out[lv.concurrency] = (rank, Best(lv.concurrency, config, lv))
    return [out[c][1] for c in sorted(out)]
