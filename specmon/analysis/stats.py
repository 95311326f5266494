"""Run statistics, percentiles and Student's t quantiles."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from specmon.model import Stats

# Two-sided 95% Student t quantiles t(0.975, df) for df = 1..30; beyond, the normal 1.96 is
# within 2%. Non-integer Welch df round down, which widens the interval (conservative).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: float) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (df >= 1; inf: normal)."""
    if df > len(_T975):
        return 1.96
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
