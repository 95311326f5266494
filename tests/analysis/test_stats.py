"""Run statistics and the speedup interval, table-driven."""

from __future__ import annotations

import math
import statistics

import pytest

from specmon.analysis.breakeven import break_even_accept_length, ms_per_token
from specmon.analysis.stats import percentile, speedup, summarize, t975


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


def test_speedup_design_scenario() -> None:
    # DESIGN.md §1: 75.9 tok/s against the true 62.9 baseline is a 21% win.
    result = speedup([75.8, 75.9, 76.0, 75.9, 75.9], [62.8, 62.9, 63.0, 62.9, 62.9])
    assert result.value == pytest.approx(75.9 / 62.9 - 1, abs=1e-3)
    assert result.low is not None and result.high is not None
    assert result.low < result.value < result.high
    assert result.high - result.low < 0.01  # tight runs, tight interval


def test_speedup_interval_widens_with_noise_and_covers_truth() -> None:
    noisy = speedup([70.0, 80.0, 76.0, 74.0, 79.0], [60.0, 66.0, 62.0, 64.0, 62.5])
    assert noisy.low is not None and noisy.high is not None
    assert noisy.high - noisy.low > 0.05
    assert noisy.low < 75.9 / 62.9 - 1 < noisy.high


def test_speedup_single_runs_have_no_interval() -> None:
    result = speedup([75.9], [62.9, 63.0])
    assert result.low is None and result.high is None
    assert math.isclose(result.value, 75.9 / 62.95 - 1)


def test_break_even_design_numbers() -> None:
    # "cycle 29.9 ms; baseline 11.1 ms/token => 2.69; true baseline 15.9 ms/token => 1.88"
    assert break_even_accept_length(29.9, 11.1) == pytest.approx(2.69, abs=0.005)
    assert break_even_accept_length(29.9, 15.9) == pytest.approx(1.88, abs=0.005)
    assert ms_per_token(62.9) == pytest.approx(15.9, abs=0.01)
    assert ms_per_token(88.8) == pytest.approx(11.26, abs=0.01)
    with pytest.raises(ValueError, match="positive"):
        break_even_accept_length(29.9, 0)
