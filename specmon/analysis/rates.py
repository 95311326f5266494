"""Counter deltas and rates with reset detection, and server-side accept length over a window."""

from __future__ import annotations

from dataclasses import dataclass

from specmon.model import ServerMetrics


@dataclass(frozen=True, slots=True)
class Delta:
    """The increase of a counter between two scrapes."""

    value: float
    reset: bool
    """The counter went down: the server restarted; `value` counts from zero."""


def counter_delta(before: float | None, after: float | None) -> Delta | None:
    """Δ of a counter; a decrease means a restart, so the increase is `after` itself."""
    if before is None or after is None:
        return None
    if after < before:
        return Delta(after, reset=True)
    return Delta(after - before, reset=False)


def counter_rate(before: float | None, after: float | None, seconds: float) -> float | None:
    """Per-second rate of a counter over `seconds`; None when unknown or the window is empty."""
    delta = counter_delta(before, after)
    if delta is None or seconds <= 0:
        return None
    return delta.value / seconds


def any_reset(before: ServerMetrics, after: ServerMetrics) -> bool:
    """Whether any counter went down between two scrapes (a restart signal)."""
    pairs = (
        (before.generation_tokens_total, after.generation_tokens_total),
        (before.prompt_tokens_total, after.prompt_tokens_total),
        (before.num_requests_total, after.num_requests_total),
        (before.spec_verify_calls_total, after.spec_verify_calls_total),
        (before.realtime_decode_tokens_total, after.realtime_decode_tokens_total),
        (before.decode_passes_total, after.decode_passes_total),
    )
    return any((d := counter_delta(b, a)) is not None and d.reset for b, a in pairs)


@dataclass(frozen=True, slots=True)
class WindowAccept:
    """Server-side accept length over a window, and where it came from."""

    value: float
    source: str
    """"counters" (Δgeneration_tokens/Δspec_verify_calls, 0.5.13+) or "gauge" (40-step window)."""


def server_accept_length(before: ServerMetrics, after: ServerMetrics) -> WindowAccept | None:
    """Accept length over the window between two scrapes (DESIGN.md §4), best source first.

    Δgeneration_tokens_total / Δspec_verify_calls_total when both counters exist and requests
    finished in the window; otherwise the `spec_accept_length` gauge when it is non-zero.
    """
    tokens = counter_delta(before.generation_tokens_total, after.generation_tokens_total)
    verifies = counter_delta(before.spec_verify_calls_total, after.spec_verify_calls_total)
    if tokens is not None and verifies is not None and verifies.value > 0:
        return WindowAccept(tokens.value / verifies.value, "counters")
    if after.spec_accept_length:
        return WindowAccept(after.spec_accept_length, "gauge")
    return None
