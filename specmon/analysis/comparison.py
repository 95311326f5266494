"""A speculative set of runs against a baseline: speedup with its interval, break-even, margin
and the verdict. The only place these figures are computed; every surface shows these.

Both sides are `Pooled` (analysis/pooled.py), so with the same runs

    accept / break-even = (1000 · accept / cycle) / base tok/s = now tok/s / base tok/s,

that is, the margin has the speedup's sign exactly, and the verdict, read off the speedup's
interval, never contradicts either.
"""

from __future__ import annotations

import math
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


def speedup(now: Pooled, base: Pooled) -> Speedup | None:
    """The speedup of `now` over `base`; None when either has no decode tok/s.

    The interval is the delta method on the log ratio, log R ± t · sqrt(s_now² + s_base²), with
    each side's relative standard error and Welch–Satterthwaite degrees of freedom (each side's
    own: its runs', or its launches' when those make the error, `analysis.pooled`). A side with
    a single run is taken to be as noisy as the other (the dashboard's one fresh probe, `check`'s
    one run), with the other's degrees of freedom.
    """
    if not now.decode_tok_s or not base.decode_tok_s:
        return None
    ratio = now.decode_tok_s / base.decode_tok_s
    a, b = now.rel_se, base.rel_se
    if a is None and b is None:
        return Speedup(ratio - 1, None, None)
    if a is None or b is None:
        known, df = (a, now.dof) if a is not None else (b, base.dof)
        assert known is not None
        se = math.sqrt(2) * known
    else:
        se = math.hypot(a, b)
        df = _welch_df(a * a, now.dof, b * b, base.dof)
    if se == 0:
        return Speedup(ratio - 1, ratio - 1, ratio - 1)
    half = t975(df) * se
    return Speedup(ratio - 1, ratio * math.exp(-half) - 1, ratio * math.exp(half) - 1)


def _welch_df(va: float, dfa: float, vb: float, dfb: float) -> float:
    denominator = va * va / dfa + vb * vb / dfb
    return (va + vb) ** 2 / denominator if denominator > 0 else dfa + dfb


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


def compare(now: Pooled, base: Pooled) -> Comparison | None:
    """Compare two pooled run sets; None when either lacks a decode tok/s."""
    gain = speedup(now, base)
    if gain is None or now.decode_tok_s is None or base.decode_tok_s is None:
        return None
    be = break_even(now.cycle_ms, base.decode_tok_s) if now.cycle_ms is not None else None
    margin = now.accept_length - be if be is not None and now.accept_length is not None else None
    return Comparison(base.decode_tok_s, now.decode_tok_s, gain, verdict(gain), be, margin)
