"""Run statistics, percentiles and t quantiles, table-driven."""

from __future__ import annotations

import math
import statistics

import pytest

from specmon.analysis.stats import percentile, summarize, t975, t_cdf, t_quantile


def test_summarize() -> None:
    s = summarize([62.8, 62.9, 63.0, 62.9, 62.7])
    assert (s.median, s.min, s.max) == (62.9, 62.7, 63.0)
    assert s.mean == pytest.approx(62.86)
    assert s.stdev == pytest.approx(statistics.stdev([62.8, 62.9, 63.0, 62.9, 62.7]))
    assert summarize([5.0]).stdev is None
    with pytest.raises(ValueError, match="no values"):
        summarize([])


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([1, 2, 3, 4], 50, 2.5),
        ([1, 2, 3, 4], 0, 1),
        ([1, 2, 3, 4], 100, 4),
        ([10, 20], 95, 19.5),
        ([7], 95, 7),
    ],
)
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_t_quantiles() -> None:
    # Tables' values (Abramowitz & Stegun 26.10), and Welch's fractional df between them.
    assert t975(1) == pytest.approx(12.706, abs=5e-4)
    assert t975(4) == pytest.approx(2.776, abs=5e-4)
    assert t975(30) == pytest.approx(2.042, abs=5e-4)
    assert t975(4) > t975(4.9) > t975(5)
    assert t975(math.inf) == pytest.approx(1.95996, abs=1e-5)
    assert t_quantile(0.995, 10) == pytest.approx(3.169, abs=5e-4)
    assert t_quantile(0.025, 3) == pytest.approx(-3.182, abs=5e-4)
    assert t_cdf(t_quantile(0.9, 2.5), 2.5) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="0 < p < 1"):
        t_quantile(1.0, 3)
