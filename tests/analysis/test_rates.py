"""Counter deltas with reset detection and windowed server accept length."""

from __future__ import annotations

from pathlib import Path

import pytest

from specmon.analysis.rates import any_reset, counter_delta, counter_rate, server_accept_length
from specmon.model import ServerMetrics
from specmon.sources.metrics import metrics_from_text

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sglang-0.5.17"


@pytest.mark.parametrize(
    ("before", "after", "value", "reset"),
    [(10.0, 25.0, 15.0, False), (25.0, 25.0, 0.0, False), (500.0, 40.0, 40.0, True)],
)
def test_counter_delta(before: float, after: float, value: float, reset: bool) -> None:
    delta = counter_delta(before, after)
    assert delta is not None and (delta.value, delta.reset) == (value, reset)


def test_unknown_counters_give_unknown() -> None:
    assert counter_delta(None, 5.0) is None
    assert counter_rate(1.0, None, 1.0) is None
    assert counter_rate(1.0, 3.0, 0.0) is None
    assert counter_rate(1.0, 3.0, 2.0) == 1.0


def test_real_window_accept_length_from_counters() -> None:
    before = metrics_from_text((FIXTURES / "spec/metrics").read_text())
    after = metrics_from_text((FIXTURES / "spec/metrics_after").read_text())
    window = server_accept_length(before, after)
    assert window is not None and window.source == "counters"
    assert window.value == pytest.approx((648 - 8) / (209 - 5))


def test_gauge_fallback_and_unknown() -> None:
    gauge_only = ServerMetrics(spec_accept_length=2.4)
    window = server_accept_length(ServerMetrics(), gauge_only)
    assert window is not None and (window.value, window.source) == (2.4, "gauge")
    assert server_accept_length(ServerMetrics(), ServerMetrics(spec_accept_length=0.0)) is None


def test_real_restart_is_detected() -> None:
    before = metrics_from_text((FIXTURES / "plain/metrics_after").read_text())
    after = metrics_from_text((FIXTURES / "plain_metrics_after_restart.txt").read_text())
    assert any_reset(before, after)
    assert not any_reset(before, before)
