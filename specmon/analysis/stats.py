"""Run statistics, percentiles and Student's t distribution (pure Python: no SciPy)."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from statistics import NormalDist

from specmon.model import Stats


@functools.lru_cache(maxsize=4096)  # the same few (p, df) recur on every refresh
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (any real df > 0; inf: the
    normal), by bisection on its distribution function."""
    if not 0 < p < 1:
        raise ValueError(f"a quantile needs 0 < p < 1, not {p}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, not {df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    if math.isinf(df):
        return NormalDist().inv_cdf(p)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2
    for _ in range(64):  # halves the bracket to below double precision
        middle = (low + high) / 2
        low, high = (middle, high) if t_cdf(middle, df) < p else (low, middle)
    return (low + high) / 2


def t975(df: float) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (inf: normal): the
    two-sided 95% interval's."""
    return t_quantile(0.975, df)


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with `df` degrees of freedom (df > 0)."""
    tail = 0.5 * _beta_regularized(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def _beta_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function (Numerical Recipes §6.4: its
    continued fraction, on whichever side of the mean converges)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The incomplete beta's continued fraction by Lentz's method."""
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return result


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
