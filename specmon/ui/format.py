"""Formatting shared by the widgets: missing values are "—", never 0."""

from __future__ import annotations

DASH = "—"


def num(value: float | None, spec: str = ".1f", unit: str = "") -> str:
    """`value` formatted with `spec` and a unit, or "—"."""
    if value is None:
        return DASH
    return f"{format(value, spec)}{(' ' + unit) if unit else ''}"


def pct(value: float | None, signed: bool = False) -> str:
    """A fraction as a percentage, e.g. +21.0%."""
    if value is None:
        return DASH
    return f"{value:+.1%}" if signed else f"{value:.0%}"


def age(seconds: float | None) -> str:
    """12s, 4m, 2h."""
    if seconds is None:
        return DASH
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def escape(text: str) -> str:
    """Text safe inside Textual content markup."""
    return text.replace("[", r"\[")
