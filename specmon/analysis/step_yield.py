"""Tokens per step at draft length k, from the acceptance by position measured at K.

Two readings of the same a_i (docs/metrics.md, "Tokens per step"):

- **independent** (vLLM's dynamic speculation, the point estimate): each drafting step accepts
  position i with probability a_i whatever happened before, AL(k) = 1 + Σ_{i<k} a_i;
- **correlated**: acceptance comes in stretches of text. The steps that accept nothing (a
  mismatch, or an n-gram without a match) fall on the same text at any k and keep yielding one
  token each; only the steps that accept something grow or shrink with k.

Both are scaled to the accept length measured, so both give AL_K at K; their difference bounds
the prediction's interval. Steps that drafted nothing (n₀) stay in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specmon.analysis.acceptance import extended_rates


def _per_step(one_token_share: float, per_other_step: float, accept_length: float) -> float:
    """Tokens per step when a share u of the tokens measured came one per step (those steps
    stay) and the other steps yield `per_other_step`: 1 / (z + (1 − z) / g), z = u / AL_K."""
    z = one_token_share / accept_length
    return 1 / (z + (1 - z) / per_other_step)


@dataclass(frozen=True, slots=True)
class StepYield:
    """The measurement tokens per step at other k are predicted from."""

    accept_length: float
    """AL_K, tokens per verify step measured at K."""
    rates: tuple[float, ...]
    """a_i for i < K, then extrapolated (`acceptance.extended_rates`)."""
    known: int
    """How many of `rates` were observed (K, or fewer when the source showed fewer)."""
    draft_tokens: int
    """K."""
    non_drafting: float = 0.0
    """n₀, the share of steps that drafted nothing."""

    def _sum(self, k: int) -> float:
        return sum(self.rates[:k])

    def independent(self, k: int, extra_rate: float | None = None) -> float:
        """AL(k) with independent positions (vLLM's formula scaled to AL_K).

        Args:
            k: The draft length.
            extra_rate: When given, positions past the known ones are accepted this often
                (the interval's ends) instead of the extrapolated rates.
        """
        n0 = self.non_drafting
        per_drafting = (self.accept_length - n0) / (1 - n0)
        measured = self._sum(self.draft_tokens)
        scale = (per_drafting - 1) / measured if measured > 0 else 0.0
        return _per_step(n0, 1 + scale * self._partial(k, extra_rate), self.accept_length)

    def correlated(self, k: int) -> float:
        """AL(k) when the steps that accepted nothing stay, whatever k (module docstring)."""
        a0 = self.rates[0] if self.rates else 0.0
        n0 = self.non_drafting
        if a0 <= 0:
            return 1.0
        per_drafting = (self.accept_length - n0) / (1 - n0)
        # Drafting steps that accepted something yield h_K; the others one token each.
        h_k = (per_drafting - (1 - a0)) / a0
        measured = self._sum(self.draft_tokens) / a0
        scale = (h_k - 1) / measured if measured > 0 else 0.0
        one_token_steps = n0 + (1 - n0) * (1 - a0)
        return _per_step(one_token_steps, 1 + scale * self._sum(k) / a0, self.accept_length)

    def _partial(self, k: int, extra_rate: float | None) -> float:
        if extra_rate is None or k <= self.known:
            return self._sum(k)
        return self._sum(self.known) + extra_rate * (k - self.known)

    def tokens(self, k: int) -> tuple[float, float, float]:
        """Tokens per step at k: the point estimate (independent) and the range around it,
        spanning the correlated reading and, past the known positions, acceptance between
        none and none lost (a_i = the last known rate)."""
        point = self.independent(k)
        last = self.rates[self.known - 1] if self.known else 0.0
        candidates = [point, self.correlated(k)]
        if k > self.known:
            candidates += [self.independent(k, 0.0), self.independent(k, last)]
        return point, min(candidates), max(candidates)


def step_yield(
    accept_length: float,
    known: Sequence[float],
    draft_tokens: int,
    non_drafting: float,
    longest: int,
) -> StepYield:
    """The yield of the runs at K for draft lengths up to `longest`.

    Args:
        accept_length: AL_K.
        known: a_i as measured (K positions, or fewer).
        draft_tokens: K.
        non_drafting: n₀ (kept below AL_K − 1 and 1, where it means something).
        longest: The longest draft length asked for (a_i extrapolated up to it).
    """
    n0 = min(max(non_drafting, 0.0), 0.99, max(accept_length - 1, 0.0))
    rates = extended_rates(known, max(longest, len(known)))
    return StepYield(accept_length, rates, len(known), draft_tokens, n0)
