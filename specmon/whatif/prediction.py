"""What speculation would do at other draft lengths: tokens per step, cycle, decode and speedup.

For draft length k, from the current runs (pooled accept length AL_K at draft length K and
their acceptance by position a_i, docs/metrics.md) and the cycle model T(k):

    AL(k)     tokens per step (`analysis.step_yield`: vLLM's 1 + Σ_{i<k} a_i scaled to AL_K)
    T(k)      the cycle (`analysis.cycle_model`)
    decode(k) = 1000 · AL(k) / T(k)   tok/s
    speedup   = decode(k) / baseline decode − 1, break-even(k) = T(k) / baseline ms per token

Speedup, break-even and the margin come from `analysis.comparison.compare` of the predicted
figures against the baseline, like any other comparison.

The interval: the models' assumptions are not random draws but a range (tokens per step between
the independent and correlated readings, T(k) between the cycle model's extremes), so the
prediction's range is [decode_min, decode_max] = [1000 · AL_low / T_high, 1000 · AL_high / T_low],
and its 95% interval is that range widened by the runs' own 95% interval:
[decode_min · exp(−t · s), decode_max · exp(t · s)], s the runs' relative standard error,
t = t(0.975, runs − 1). It holds the truth at least 95% of the time when the truth lies within
the models' range (benchmarks/coverage.py); the speedup's interval is built the same way, from
`compare` at each end of the range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from specmon.analysis.acceptance import PositionAcceptance
from specmon.analysis.comparison import Comparison, compare, verdict
from specmon.analysis.cycle_model import CycleFit, CycleModel
from specmon.analysis.pooled import Pooled
from specmon.analysis.stats import t975
from specmon.analysis.step_yield import step_yield

EXTRA_DRAFT_LENGTHS = 2
"""How far past the current draft length predictions go (acceptance is extrapolated there)."""


@dataclass(frozen=True, slots=True)
class Prediction:
    """The predicted figures at one draft length."""

    draft_tokens: int
    tokens_per_step: float
    cycle_ms: float
    cycle_low: float
    """The lowest T(k) the cycle model allows (`CycleModel.cycle_range`)."""
    cycle_high: float
    decode_tok_s: float
    decode_low: float | None
    """95% interval of the prediction: the models' range widened by the runs' own interval
    (module docstring; None when neither is known)."""
    decode_high: float | None
    comparison: Comparison | None
    """Against the valid baseline: speedup and its interval, break-even, margin; None without."""
    measured: bool
    """k is the draft length the runs were measured at."""
    extrapolated: bool
    """Acceptance at some position below k was not observed (`extended_rates`)."""

    @property
    def speedup(self) -> float | None:
        """decode / baseline decode − 1, or None without a baseline."""
        return None if self.comparison is None else self.comparison.speedup.value


@dataclass(frozen=True, slots=True)
class WhatIf:
    """Predictions at draft lengths 1 … K + `EXTRA_DRAFT_LENGTHS`, and the best of them."""

    draft_tokens: int
    """K, the draft length measured."""
    positions: PositionAcceptance
    cycle: CycleModel
    predictions: tuple[Prediction, ...]
    non_drafting: float = 0.0
    """n₀ as used: the share of steps that drafted nothing."""

    @property
    def best(self) -> Prediction:
        """The draft length with the highest predicted decode tok/s."""
        return max(self.predictions, key=lambda p: p.decode_tok_s)

    @property
    def faster(self) -> Prediction | None:
        """The draft length worth a relaunch: the best one, when it is not the current one, its
        interval's low end lies above the decode measured now, and something bounds what
        another length costs (a fitted line, or a baseline); None: keep the current length.
        The advisor and every what-if surface name this one, so they never disagree."""
        best, current = self.best, self.current
        if best.draft_tokens == current.draft_tokens or best.decode_low is None:
            return None
        if not self.bounded:
            return None
        return best if best.decode_low > current.decode_tok_s else None

    @property
    def bounded(self) -> bool:
        """Whether a measurement bounds what another draft length costs: a line through
        measured cycles, or a baseline. One cycle without either is bounded only by the
        assumption's extremes (`analysis.cycle_model`, case 3), too wide to rank by."""
        if self.cycle.fit == CycleFit.LINE:
            return True
        return self.cycle.other is not None and self.cycle.base_ms is not None

    @property
    def choice(self) -> Prediction:
        """The draft length every surface names best: `faster`, else the current one."""
        return self.faster or self.current

    @property
    def current(self) -> Prediction:
        """The prediction at the measured draft length."""
        return next(p for p in self.predictions if p.measured)

    def at(self, k: int) -> Prediction | None:
        """The prediction at draft length k, if made."""
        return next((p for p in self.predictions if p.draft_tokens == k), None)


def what_if(
    now: Pooled,
    positions: PositionAcceptance,
    draft_tokens: int,
    cycle: CycleModel,
    base: Pooled | None,
    max_draft_tokens: int | None = None,
    non_drafting: float = 0.0,
) -> WhatIf | None:
    """Predict every draft length from 1 to `max_draft_tokens` (default K + 2).

    Args:
        now: The pooled runs at draft length K.
        positions: Their acceptance by position.
        draft_tokens: K.
        cycle: T(k).
        base: The valid baseline's pooled runs, or None.
        max_draft_tokens: The longest draft length predicted.
        non_drafting: n₀, the share of the runs' steps that drafted nothing (in [0, 1)).

    Returns:
        None when the runs have no accept length or no acceptance by position.
    """
    if now.accept_length is None or not positions.rates or draft_tokens < 1:
        return None
    top = max(max_draft_tokens or draft_tokens + EXTRA_DRAFT_LENGTHS, draft_tokens)
    known = positions.rates[:draft_tokens]
    steps = step_yield(now.accept_length, known, draft_tokens, non_drafting, top)
    noise = now.rel_se
    predictions = []
    for k in range(1, top + 1):
        tokens, tokens_low, tokens_high = steps.tokens(k)
        extra = max(0, k - len(known))
        t = cycle.cycle_ms(k)
        t_low, t_high = cycle.cycle_range(k)
        decode = 1000 * tokens / t
        lowest, highest = 1000 * tokens_low / t_high, 1000 * tokens_high / t_low
        low = high = None
        if noise is not None:
            half = t975(now.runs - 1) * noise
            low, high = lowest * math.exp(-half), highest * math.exp(half)
        elif lowest < highest:
            low, high = lowest, highest  # one run: the models' range alone
        predictions.append(
            Prediction(
                draft_tokens=k,
                tokens_per_step=tokens,
                cycle_ms=t,
                cycle_low=t_low,
                cycle_high=t_high,
                decode_tok_s=decode,
                decode_low=low,
                decode_high=high,
                comparison=(
                    _predicted_comparison(now, tokens, t, (lowest, decode, highest), base)
                    if base is not None
                    else None
                ),
                measured=k == draft_tokens,
                extrapolated=extra > 0,
            )
        )
    return WhatIf(draft_tokens, positions, cycle, tuple(predictions), steps.non_drafting)


def _predicted_comparison(
    now: Pooled, tokens: float, cycle_ms: float, speeds: tuple[float, float, float], base: Pooled
) -> Comparison | None:
    """`compare` of the predicted figures against the baseline, its interval from the low end
    of the lowest speed's interval to the high end of the highest's (module docstring)."""
    lowest, decode, highest = (
        compare(Pooled(now.runs, speed, now.rel_se, tokens, cycle_ms), base) for speed in speeds
    )
    if decode is None or lowest is None or highest is None:
        return None
    low, high = lowest.speedup.low, highest.speedup.high
    if low is None or high is None:  # no noise estimate on either side: the models' range
        if lowest.speedup.value == highest.speedup.value:
            return decode
        low, high = lowest.speedup.value, highest.speedup.value
    gain = replace(decode.speedup, low=low, high=high)
    return replace(decode, speedup=gain, verdict=verdict(gain))
