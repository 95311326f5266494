"""A speculative set of runs against a baseline: speedup with its interval, break-even, margin
and the verdict. The only place these figures are computed; every surface shows these.

Both sides are `Pooled` (analysis/pooled.py), so with the same runs

    accept / break-even = (1000 · accept / cycle) / base tok/s = now tok/s / base tok/s,

that is, the margin has the speedup's sign exactly, and the verdict, read off the speedup's
interval, never contradicts either.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from specmon.analysis.pooled import Pooled
from specmon.analysis.stats import t975


class Verdict(StrEnum):
    """What the comparison says, uncertainty included."""

    WINNING = "winning"
    """The whole 95% interval of the speedup is above 0 (or, without one, the speedup is)."""
    LOSING = "losing"
    """The whole interval is below 0 (or, without one, the speedup is)."""
    WITHIN_NOISE = "within noise"
    """The interval holds 0: this many runs cannot tell."""


def break_even(cycle_ms: float, base_tok_s: float) -> float:
    """The accept length above which speculation wins: cycle / baseline ms per token.

    DESIGN.md §1: 29.9 ms / 11.1 ms = 2.69; with the true baseline, 29.9 / 15.9 = 1.88.
    """
    if base_tok_s <= 0:
        raise ValueError("baseline tok/s must be positive")
    return cycle_ms * base_tok_s / 1000


@dataclass(frozen=True, slots=True)
class Speedup:
    """now / base − 1, with its 95% interval (None when neither side has two timed runs)."""

    value: float
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class RoundSpread:
    """How much the log speedup moves between rounds beyond what their runs show.

    A managed A/B (`specmon ab`) relaunches both servers each round, and a server's speed moves
    from one launch to the next by more than one launch's runs show (and on a shared machine,
    from one minute to the next). Each round r gives its own log speedup d_r with the runs'
    variance v_r; the rounds' excess spread is DerSimonian–Laird's τ² (zero when the rounds
    agree within their runs' noise).
    """

    speedups: tuple[float, ...]
    """Each round's own speedup (now_r / base_r − 1), in round order."""
    tau2: float
    """τ²: the variance of a round's log speedup beyond its runs' noise."""

    @property
    def rounds(self) -> int:
        return len(self.speedups)

    @property
    def variance(self) -> float:
        """τ² / R: what it adds to the variance of the log speedup pooled over the rounds."""
        return self.tau2 / self.rounds


def round_spread(rounds: Sequence[tuple[Pooled, Pooled]]) -> RoundSpread | None:
    """The spread of (now, base) pairs of rounds; None with fewer than two comparable rounds.

    d_r = log(now_r / base_r), v_r = s_now,r² + s_base,r²; with w_r = 1/v_r,
    Q = Σ w_r (d_r − d̄_w)² and τ² = max(0, (Q − (R − 1)) / (Σw − Σw²/Σw)). A round without a
    noise estimate (one run a side) leaves only the rounds' own spread: τ² = their variance.
    """
    # d_r, and v_r when both sides of the round have a noise estimate.
    found: list[tuple[float, float | None]] = []
    for now, base in rounds:
        if now.decode_tok_s and base.decode_tok_s:
            v = None
            if now.rel_se is not None and base.rel_se is not None:
                v = now.rel_se**2 + base.rel_se**2
            found.append((math.log(now.decode_tok_s / base.decode_tok_s), v or None))
    n = len(found)
    if n < 2:
        return None
    speedups = tuple(math.exp(d) - 1 for d, _ in found)
    weights = [1 / v for _, v in found if v is not None]
    if len(weights) < n:
        return RoundSpread(speedups, statistics.variance([d for d, _ in found]))
    total = sum(weights)
    mean = sum(w * d for w, (d, _) in zip(weights, found, strict=True)) / total
    q = sum(w * (d - mean) ** 2 for w, (d, _) in zip(weights, found, strict=True))
    scale = total - sum(w * w for w in weights) / total
    return RoundSpread(speedups, max(0.0, (q - (n - 1)) / scale) if scale > 0 else 0.0)


def speedup(now: Pooled, base: Pooled, spread: RoundSpread | None = None) -> Speedup | None:
    """The speedup of `now` over `base`; None when either has no decode tok/s.

    The interval is the delta method on the log ratio, log R ± t · sqrt(s_now² + s_base²), with
    each side's relative standard error and Welch–Satterthwaite degrees of freedom. A side with
    a single run is taken to be as noisy as the other (the dashboard's one fresh probe, `check`'s
    one run), with the other's degrees of freedom. Over rounds (`spread`), the rounds' excess
    variance τ²/R is added as DerSimonian–Laird's interval adds it, with the normal quantile
    (infinite degrees of freedom in the Satterthwaite sum): with two or three rounds a t with
    R − 1 df (Hartung–Knapp) calls +66% and +159% in two rounds "within noise"; the report
    shows the rounds' own speedups beside it instead.
    """
    if not now.decode_tok_s or not base.decode_tok_s:
        return None
    ratio = now.decode_tok_s / base.decode_tok_s
    a, b = now.rel_se, base.rel_se
    if a is None and b is None:
        return Speedup(ratio - 1, None, None)
    # (variance, degrees of freedom) of each part of the log ratio's variance.
    parts: list[tuple[float, float]]
    if a is None or b is None:
        known, runs = (a, now.runs) if a is not None else (b, base.runs)
        assert known is not None
        parts = [(2 * known * known, float(runs - 1))]
    else:
        parts = [(a * a, float(now.runs - 1)), (b * b, float(base.runs - 1))]
    if spread is not None and spread.variance > 0:
        parts.append((spread.variance, math.inf))
    variance = sum(v for v, _ in parts)
    if variance == 0:
        return Speedup(ratio - 1, ratio - 1, ratio - 1)
    half = t975(_satterthwaite_df(parts)) * math.sqrt(variance)
    return Speedup(ratio - 1, ratio * math.exp(-half) - 1, ratio * math.exp(half) - 1)


def _satterthwaite_df(parts: Sequence[tuple[float, float]]) -> float:
    """(Σ v)² / Σ (v² / df): Welch–Satterthwaite's for a sum of variance estimates."""
    denominator = sum(v * v / df for v, df in parts)
    return (
        sum(v for v, _ in parts) ** 2 / denominator if denominator > 0 else sum(d for _, d in parts)
    )


def verdict(gain: Speedup) -> Verdict:
    """Winning or losing when the interval (or, without one, the value) says so; else noise."""
    low = gain.value if gain.low is None else gain.low
    high = gain.value if gain.high is None else gain.high
    if low > 0:
        return Verdict.WINNING
    if high < 0:
        return Verdict.LOSING
    return Verdict.WITHIN_NOISE


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every figure of one comparison, as every surface shows it."""

    base_tok_s: float
    now_tok_s: float
    speedup: Speedup
    verdict: Verdict
    break_even: float | None
    """Accept length at which `now`'s cycle would match the baseline; None without a cycle."""
    margin: float | None
    """now's accept length − break-even; same sign as the speedup."""


def compare(now: Pooled, base: Pooled, spread: RoundSpread | None = None) -> Comparison | None:
    """Compare two pooled run sets; None when either lacks a decode tok/s. `spread`: the
    rounds' spread when the sets pool several rounds of a managed A/B (`round_spread`)."""
    gain = speedup(now, base, spread)
    if gain is None or now.decode_tok_s is None or base.decode_tok_s is None:
        return None
    be = break_even(now.cycle_ms, base.decode_tok_s) if now.cycle_ms is not None else None
    margin = now.accept_length - be if be is not None and now.accept_length is not None else None
    return Comparison(base.decode_tok_s, now.decode_tok_s, gain, verdict(gain), be, margin)
