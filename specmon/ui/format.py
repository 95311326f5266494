"""Formatting shared by the widgets: missing values are "—", never 0 (`specmon.wording`)."""

from __future__ import annotations

from specmon.wording import DASH, age, num, pct

__all__ = ["DASH", "age", "escape", "num", "pct"]


def escape(text: str) -> str:
    """Text safe inside Textual content markup."""
    return text.replace("[", r"\[")
