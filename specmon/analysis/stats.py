"""Run statistics, percentiles and the speedup of two run sets with a 95% interval."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from specmon.model import Stats

# Two-sided 95% Student t quantiles t(0.975, df) for df = 1..30; beyond, the normal 1.96 is
# within 2%. Non-integer Welch df round down, which widens the interval (conservative).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: float) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (df >= 1)."""
    index = max(1, math.floor(df))
    return _T975[index - 1] if index <= len(_T975) else 1.96


def summarize(values: Sequence[float]) -> Stats:
    """Median, min, max, mean and sample stdev of a non-empty sequence."""
    if not values:
        raise ValueError("no values to summarize")
    return Stats(
        median=statistics.median(values),
        min=min(values),
        max=max(values),
        mean=statistics.fmean(values),
        stdev=statistics.stdev(values) if len(values) > 1 else None,
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation between order statistics."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class Speedup:
    """spec / baseline − 1, with a 95% interval (None when either side has one run)."""

    value: float
    low: float | None
    high: float | None


def speedup(spec: Sequence[float], base: Sequence[float]) -> Speedup:
    """The speedup of run set `spec` over run set `base` (both tok/s), ratio of means.

    The interval is the delta method on the log ratio, with Welch–Satterthwaite degrees of
    freedom: log(R) ± t·sqrt(s1²/(n1·m1²) + s2²/(n2·m2²)).
    """
    if not spec or not base:
        raise ValueError("both run sets need at least one run")
    m1, m2 = statistics.fmean(spec), statistics.fmean(base)
    if m1 <= 0 or m2 <= 0:
        raise ValueError("tok/s must be positive")
    ratio = m1 / m2
    if len(spec) < 2 or len(base) < 2:
        return Speedup(ratio - 1, None, None)
    a = statistics.variance(spec) / (len(spec) * m1 * m1)
    b = statistics.variance(base) / (len(base) * m2 * m2)
    se = math.sqrt(a + b)
    if se == 0:
        return Speedup(ratio - 1, ratio - 1, ratio - 1)
    df = (a + b) ** 2 / (a * a / (len(spec) - 1) + b * b / (len(base) - 1))
    half = t975(df) * se
    return Speedup(ratio - 1, ratio * math.exp(-half) - 1, ratio * math.exp(half) - 1)
