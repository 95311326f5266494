"""What speculation would do at other draft lengths: tokens per step, cycle, decode and speedup.

For draft length k, from the current runs (pooled accept length AL_K at draft length K and
their acceptance by position a_i, docs/metrics.md) and the cycle model T(k):

    AL(k)     tokens per step (`analysis.step_yield`: vLLM's 1 + Σ_{i<k} a_i scaled to AL_K)
    T(k)      the cycle (`analysis.cycle_model`)
    decode(k) = 1000 · AL(k) / T(k)   tok/s
    speedup   = decode(k) / baseline decode − 1, break-even(k) = T(k) / baseline ms per token

Speedup, break-even and the margin come from `analysis.comparison.compare` of the predicted
figures against the baseline, like any other comparison; the interval joins the runs' noise with
the ranges the two models leave.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specmon.analysis.acceptance import PositionAcceptance
from specmon.analysis.comparison import Comparison, compare
from specmon.analysis.cycle_model import CycleModel
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
    decode_tok_s: float
    decode_low: float | None
    """95% interval of the prediction: the runs' noise and the range the model's assumptions
    leave (None when neither is known)."""
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
        model_rel = math.log((tokens_high / t_low) / (tokens_low / t_high)) / (2 * 1.96)
        rel_se = _combined(noise, model_rel)
        low = high = None
        if rel_se is not None:
            half = (t975(now.runs - 1) if now.runs >= 2 else 1.96) * rel_se
            low, high = decode * math.exp(-half), decode * math.exp(half)
        # A single run has no noise estimate: the comparison then takes the baseline's (as for
        # any one-run comparison); the model's range stays in `decode_low`/`decode_high`.
        predicted = Pooled(now.runs, decode, rel_se if noise is not None else None, tokens, t)
        predictions.append(
            Prediction(
                draft_tokens=k,
                tokens_per_step=tokens,
                cycle_ms=t,
                decode_tok_s=decode,
                decode_low=low,
                decode_high=high,
                comparison=compare(predicted, base) if base is not None else None,
                measured=k == draft_tokens,
                extrapolated=extra > 0,
            )
        )
    return WhatIf(draft_tokens, positions, cycle, tuple(predictions), steps.non_drafting)


def _combined(noise: float | None, model_rel: float) -> float | None:
    """The runs' relative standard error and the model's, independent; None if neither."""
    if noise is None and model_rel == 0:
        return None
    return math.hypot(noise or 0.0, model_rel)
