"""The cost of one draft+verify cycle at draft length k, T(k), fitted from what was measured.

    T(0) = T₀                      the baseline's ms per token (one plain decode step)
    T(k) = α + β·k   for k ≥ 1      α: a fixed cost per speculation step, β: the cost per draft

What it is fitted from, best first (`fit_cycle`):

1. Cycles measured at two or more draft lengths (this snapshot and earlier ones of the same
   configuration at other k): α and β by least squares; nothing assumed beyond the line.
2. One measured cycle T(K) and the baseline's T₀: the split between α and β is not measured,
   so it is assumed from how the server drafts, and the interval spans both extremes, "all per
   draft" (α = T₀, β = (T(K) − T₀)/K) and "all fixed" (β = 0, α = T(K)):
   - a draft model (EAGLE, a llama.cpp draft, a standalone draft) runs once per draft token:
     all per draft;
   - n-gram / prompt lookup drafts without a model and verifies k + 1 tokens in one target
     pass, which costs about the same for any small k: all fixed.
3. One measured cycle and no baseline: all fixed (T(k) = T(K)), the interval reaching the
   other extreme a lookup drafter allows, "all per verified token": T(k) = T(K)·(k + 1)/(K + 1),
   a verify pass whose cost is all in the tokens it checks (a compute-bound server: vLLM's
   n-gram on CPU measured T(2)/T(4) of 0.68 in CI, docs/compatibility.md), with no fixed cost
   per step. A cost that is a fixed part plus a part per token lies between the two. For a
   draft model the fixed assumption would make drafting free, so `predict` refuses to rank
   other draft lengths instead (whatif/inputs.py).

Bounds: a cycle is positive and never cheaper with more drafts. A line through measured cycles
that falls as k grows (noise, or a server that changed between the snapshots), or reaches 0 at
k = 1, is set aside for the one-cycle model of the current point, with a note saying why; a
single cycle under the baseline's step cannot be split into fixed and per-draft costs (the
per-draft extreme would make each draft save time), so it is taken as fixed, with a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class CycleFit(StrEnum):
    """Which of the module's cases T(k) rests on."""

    LINE = "line"
    """Least squares through measured cycles at two or more draft lengths."""
    PER_DRAFT = "per_draft"
    """One measured cycle and the baseline; assumed: the extra cost grows with each draft."""
    FIXED = "fixed"
    """One measured cycle; assumed: the cycle costs the same at any draft length."""


ASSUMPTIONS = {
    CycleFit.LINE: "T(k) = α + β·k by least squares through the cycles measured at k = {ks}",
    CycleFit.PER_DRAFT: (
        "T(k) = T₀ + k·(T(K) − T₀)/K, assumed (one cycle measured): a draft model costs about "
        "one pass per draft token and verifying about one plain step"
    ),
    CycleFit.FIXED: (
        "T(k) = T(K), assumed (one cycle measured): drafting costs next to nothing (lookup) "
        "and verifying k + 1 tokens in one pass about the same for any small k"
    ),
}
BOUNDED = "; the interval reaches T(k) = {other}"
"""Said after a one-cycle assumption when the baseline bounds it by the other extreme."""

NGRAM_ALGORITHMS = ("ngram", "lookup")
"""Algorithm names (lower case, as substrings) that draft without a model: SGLang NGRAM,
vLLM ngram, llama.cpp's ngram and lookup types."""


def drafts_without_model(algorithm: str) -> bool:
    """Whether a speculative algorithm drafts by lookup rather than with a draft model."""
    name = algorithm.lower()
    return any(word in name for word in NGRAM_ALGORITHMS)


@dataclass(frozen=True, slots=True)
class CyclePoint:
    """A measured cycle at one draft length."""

    draft_tokens: int
    cycle_ms: float
    label: str
    """Where it was measured, e.g. "now", "snapshot #12"."""


@dataclass(frozen=True, slots=True)
class CycleModel:
    """T(k) with the range its assumption leaves open."""

    fit: CycleFit
    base_ms: float | None
    """T₀, the baseline's ms per token; None without a valid baseline."""
    alpha_ms: float
    beta_ms: float
    other: tuple[float, float] | None
    """(α, β) of the other extreme of the assumption (cases 2 and 3); None when the fit is
    measured or the cycle is no longer than the baseline's step."""
    points: tuple[CyclePoint, ...]
    note: str | None = None
    """Why the fit is not what the points alone would give (a line set aside), or None."""

    def cycle_ms(self, k: int) -> float:
        """T(k) in ms."""
        if k == 0 and self.base_ms is not None:
            return self.base_ms
        return self.alpha_ms + self.beta_ms * k

    def cycle_range(self, k: int) -> tuple[float, float]:
        """The lowest and highest T(k) the fit allows (equal where nothing is assumed)."""
        value = self.cycle_ms(k)
        if self.other is None:
            return value, value
        alt = self.other[0] + self.other[1] * k
        return min(value, alt), max(value, alt)

    @property
    def assumption(self) -> str:
        """The assumption T(k) rests on, in one sentence."""
        ks = ", ".join(str(k) for k in sorted({p.draft_tokens for p in self.points}))
        text = ASSUMPTIONS[self.fit].format(ks=ks)
        if self.other is not None:
            if self.fit == CycleFit.PER_DRAFT:
                other = "T(K)"
            elif self.base_ms is None:
                other = "T(K)·(k + 1)/(K + 1) (verifying costs per token checked; no baseline)"
            else:
                other = "T₀ + k·(T(K) − T₀)/K"
            text += BOUNDED.format(other=other)
        if self.note is not None:
            text += f" ({self.note})"
        return text


def fit_cycle(
    points: Sequence[CyclePoint], base_ms: float | None, *, model_drafts: bool
) -> CycleModel | None:
    """T(k) from measured cycles and the baseline step (module docstring: the three cases).

    Args:
        points: Measured cycles; the current one first. Points at the same k are averaged.
        base_ms: The valid baseline's ms per token, or None.
        model_drafts: Whether the server drafts with a model (case 2's assumption).

    Returns:
        None without any point.
    """
    by_k: dict[int, list[float]] = {}
    for p in points:
        if p.draft_tokens >= 1 and p.cycle_ms > 0:
            by_k.setdefault(p.draft_tokens, []).append(p.cycle_ms)
    if not by_k:
        return None
    mean = {k: sum(v) / len(v) for k, v in by_k.items()}
    kept = tuple(p for p in points if p.draft_tokens in by_k)
    if len(mean) < 2:
        return _one_cycle(kept, base_ms, model_drafts, None)
    alpha, beta = _least_squares(mean)
    if beta >= 0 and alpha + beta > 0:
        return CycleModel(CycleFit.LINE, base_ms, alpha, beta, None, kept)
    measured = ", ".join(f"{mean[k]:.1f} ms at k = {k}" for k in sorted(mean))
    why = "falls as k grows" if beta < 0 else f"reaches T(1) = {alpha + beta:.1f} ms"
    current = kept[0]  # the current point comes first
    note = f"the line through {measured} {why}, which a cycle cannot: set aside"
    return _one_cycle((current,), base_ms, model_drafts, note)


def _one_cycle(
    kept: tuple[CyclePoint, ...], base_ms: float | None, model_drafts: bool, note: str | None
) -> CycleModel:
    """Cases 2 and 3 from the first point (module docstring), bounded."""
    k, t = kept[0].draft_tokens, kept[0].cycle_ms
    if base_ms is None:
        per_token = t / (k + 1)
        return CycleModel(CycleFit.FIXED, None, t, 0.0, (per_token, per_token), kept, note)
    if t <= base_ms:
        under = (
            f"the cycle, {t:.1f} ms, is no longer than the baseline's step, {base_ms:.1f} ms: "
            "no cost per draft to tell apart"
        )
        note = f"{note}; {under}" if note else under
        return CycleModel(CycleFit.FIXED, base_ms, t, 0.0, None, kept, note)
    per_draft = (base_ms, (t - base_ms) / k)
    fixed = (t, 0.0)
    chosen, other = (per_draft, fixed) if model_drafts else (fixed, per_draft)
    fit = CycleFit.PER_DRAFT if model_drafts else CycleFit.FIXED
    return CycleModel(fit, base_ms, chosen[0], chosen[1], other, kept, note)


def _least_squares(mean: dict[int, float]) -> tuple[float, float]:
    """α, β of the line through (k, T) by ordinary least squares."""
    n = len(mean)
    sx = sum(mean)
    sy = sum(mean.values())
    sxx = sum(k * k for k in mean)
    sxy = sum(k * t for k, t in mean.items())
    beta = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - beta * sx) / n, beta
