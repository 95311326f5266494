"""Break-even acceptance length: above it, speculation beats plain decoding."""

from __future__ import annotations


def break_even_accept_length(cycle_ms: float, baseline_ms_per_token: float) -> float:
    """cycle time / baseline ms-per-token (DESIGN.md §1: 29.9 / 11.1 = 2.69; / 15.9 = 1.88)."""
    if baseline_ms_per_token <= 0:
        raise ValueError("baseline ms/token must be positive")
    return cycle_ms / baseline_ms_per_token


def ms_per_token(tok_s: float) -> float:
    """1000 / tok/s."""
    if tok_s <= 0:
        raise ValueError("tok/s must be positive")
    return 1000.0 / tok_s
