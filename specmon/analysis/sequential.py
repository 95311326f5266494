"""`check`'s sequential rule: probe until the speedup's interval excludes 0 or the budget ends.

Each probe adds a run; the speedup against the baseline is judged only at fixed looks, after
`LOOKS` probes, and once more (the last look) when the time budget or the probe cap ends the
probing earlier. The budget's end takes the place of the looks not yet made, so there are never
more than len(LOOKS) looks. Each look reads the speedup's interval at 1 − α / len(LOOKS)
(Bonferroni's split of α over the looks): whatever the looks' dependence, the chance that any
of them excludes a true speedup is at most α, so a server with no true speedup is called
winning or losing in at most α of checks (benchmarks/coverage.py measures it: docs/metrics.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from specmon.analysis.comparison import CONFIDENCE, Comparison, Verdict, compare
from specmon.analysis.pooled import Pooled, pool
from specmon.model import RunFigures

LOOKS = (3, 5, 10)
"""Probes after which the speedup is judged; the last is the cap on probes."""
DEFAULT_BUDGET_S = 30.0
"""Seconds of probing before `check` settles for "within noise"."""


@dataclass(frozen=True, slots=True)
class Look:
    """What the rule says after one more probe."""

    probes: int
    comparison: Comparison | None
    """The comparison at the look's level; None when this probe is not a look (or a side has
    no decode speed)."""
    done: bool
    """Stop probing: a verdict other than within noise, the budget or the cap reached."""


@dataclass(frozen=True, slots=True)
class SequentialRule:
    """Looks at fixed probe counts, α split evenly over them (module docstring)."""

    looks: tuple[int, ...] = LOOKS
    alpha: float = 1 - CONFIDENCE

    @property
    def level(self) -> float:
        """Each look's confidence level: 1 − α / looks (0.983 for three looks at 5%)."""
        return 1 - self.alpha / len(self.looks)

    @property
    def max_probes(self) -> int:
        return self.looks[-1]

    def step(
        self, runs: Sequence[RunFigures], base: Pooled, elapsed_s: float, budget_s: float
    ) -> Look:
        """After `runs` (every probe so far) took `elapsed_s`: look if this is a look, and say
        whether to stop (`judge`), the probes against the stored baseline `base`."""
        return self.judge(
            len(runs), lambda level: compare(pool(runs), base, level=level), elapsed_s, budget_s
        )

    def judge(
        self,
        n: int,
        comparison_at: Callable[[float], Comparison | None],
        elapsed_s: float,
        budget_s: float,
    ) -> Look:
        """After `n` probes (or interleaved pairs: analysis/paired.py) took `elapsed_s`: look
        if this is a look, reading `comparison_at` the look's level, and say whether to stop.
        Another probe is taken only if, at the mean time per probe so far, it would end within
        `budget_s`."""
        out_of_time = elapsed_s * (n + 1) / n > budget_s if n else False
        last = n >= self.max_probes or out_of_time
        if n not in self.looks and not last:
            return Look(n, None, False)
        comparison = comparison_at(self.level)
        decided = comparison is None or comparison.verdict != Verdict.WITHIN_NOISE
        return Look(n, comparison, decided or last)
