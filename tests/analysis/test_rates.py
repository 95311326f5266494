"""Counter deltas with reset detection and windowed server accept length."""

from __future__ import annotations

from pathlib import Path

import pytest

from specmon.analysis.rates import (
    any_reset,
    counter_delta,
    counter_rate,
    draft_acceptance,
    exclusive_accept_length,
    server_accept_length,
)
from specmon.model import ServerMetrics
from specmon.sources.backends import llamacpp, vllm
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


REAL = Path(__file__).parent.parent / "fixtures"


def _scrapes(folder: str, after: str) -> tuple[ServerMetrics, ServerMetrics]:
    parse = vllm.metrics_from_text if folder.startswith("vllm") else llamacpp.metrics_from_text
    return (
        parse((REAL / folder / "metrics_before").read_text()),
        parse((REAL / folder / after).read_text()),
    )


# (folder, after, drafts, accepted, draft tokens, per position, steps, tokens per step), from the
# real captures: one 128-token stream on a fresh server, then one plus six concurrent ones.
DRAFT_WINDOWS = [
    ("vllm-0.32.0-cpu", "metrics_after", 33, 60, 124, (22, 17, 12, 9), 127 - 60, 127),
    ("vllm-0.32.0-cpu", "metrics_after_concurrent", 224, 546, 658, (210, 133, 119, 84),
     896 - 7 - 546, 896 - 7),
    # llama.cpp counts no requests: no steps from its counters.
    ("llamacpp-cpu", "metrics_after", 81, 45, 318, (19, 9, 9, 8), None, None),
    ("llamacpp-cpu", "metrics_after_concurrent", 252, 637, 1008, (196, 154, 147, 140), None,
     None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("folder", "after", "drafts", "accepted", "proposed", "positions", "steps", "decode_tokens"),
    DRAFT_WINDOWS,
)
def test_draft_acceptance_of_real_windows(
    folder: str,
    after: str,
    drafts: int,
    accepted: int,
    proposed: int,
    positions: tuple[int, ...],
    steps: int | None,
    decode_tokens: int | None,
) -> None:
    before, later = _scrapes(folder, after)
    window = draft_acceptance(before, later)
    assert window is not None
    assert window.drafts == drafts
    assert window.accept_length == pytest.approx(1 + accepted / drafts)
    assert window.rate == pytest.approx(accepted / proposed)
    assert window.per_position == pytest.approx([n / drafts for n in positions])
    assert window.steps == steps
    if steps is None or decode_tokens is None:
        assert window.tokens_per_step is None
    else:
        assert window.tokens_per_step == pytest.approx(decode_tokens / steps)
    accept = server_accept_length(before, later)
    assert accept is not None and accept.source == "drafts"
    assert accept.value == pytest.approx(1 + accepted / drafts)


def test_a_probe_alone_has_the_counters_accept_length_and_a_shared_one_none() -> None:
    """The real windows: one 128-token stream alone (the counters are its own: vLLM's one
    finished request, llama.cpp's tokens), then the same beside six others (theirs mixed in)."""
    alone = _scrapes("vllm-0.32.0-cpu", "metrics_after")
    assert exclusive_accept_length(*alone, 128) == pytest.approx(1 + 60 / 33)
    assert exclusive_accept_length(*alone, 127) is None  # not the probe's tokens: not its own
    assert (
        exclusive_accept_length(*_scrapes("vllm-0.32.0-cpu", "metrics_after_concurrent"), 128)
        is None
    )
    llama = _scrapes("llamacpp-cpu", "metrics_after")  # no request counter: the tokens decide
    assert exclusive_accept_length(*llama, 128) == pytest.approx(1 + 45 / 81)


def test_no_drafts_no_acceptance() -> None:
    idle = ServerMetrics(spec_drafts_total=5.0, spec_accepted_tokens_total=9.0)
    assert draft_acceptance(idle, idle) is None
    assert draft_acceptance(ServerMetrics(), idle) is None  # unknown before: unknown window


def test_draft_counters_going_down_are_a_restart() -> None:
    assert any_reset(ServerMetrics(spec_drafts_total=10.0), ServerMetrics(spec_drafts_total=2.0))
    assert any_reset(ServerMetrics(decode_seconds_total=3.0), ServerMetrics(decode_seconds_total=0))


def test_window_accept_length_uses_draft_counters_for_vllm() -> None:
    from specmon.session.window import MetricsWindow

    window = MetricsWindow()
    window.add(0.0, ServerMetrics(spec_drafts_total=100.0, spec_accepted_tokens_total=150.0))
    window.add(5.0, ServerMetrics(spec_drafts_total=200.0, spec_accepted_tokens_total=420.0))
    accept = window.accept_length(60)
    assert accept is not None
    assert (accept.value, accept.source) == (1 + 270 / 100, "drafts")
