"""Run statistics, percentiles and t quantiles, table-driven."""

from __future__ import annotations

import statistics

import pytest

from specmon.analysis.stats import percentile, summarize, t975


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
    [([1, 2, 3, 4], 50, 2.5), ([1, 2, 3, 4], 0, 1), ([1, 2, 3, 4], 100, 4),
     ([10, 20], 95, 19.5), ([7], 95, 7)],
)  # fmt: skip
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_t_quantiles() -> None:
    assert t975(4) == 2.776
    assert t975(4.9) == 2.776  # rounds down: conservative
    assert t975(1000) == 1.96
