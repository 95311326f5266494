"""The Speculation panel's margin to break-even in its own words: above, below or at, never the
speedup's verdict (which reads the speedup's interval, not the margin)."""

from __future__ import annotations

import pytest

from specmon.analysis.comparison import Verdict
from specmon.ui.widgets.spec_panel import margin_text


@pytest.mark.parametrize(
    ("margin", "verdict", "text"),
    [
        (0.38, Verdict.WITHIN_NOISE, "[bold ]+0.38 above[/]"),  # it said "+0.38 within noise"
        (0.38, Verdict.WINNING, "[bold $good]+0.38 above[/]"),
        (-0.2, Verdict.LOSING, "[bold $bad]-0.20 below[/]"),
        (-0.2, Verdict.WITHIN_NOISE, "[bold ]-0.20 below[/]"),
        (0.0, None, "[bold ]+0.00 at[/]"),
    ],
)
def test_the_margin_says_where_it_lies_not_the_verdict(
    margin: float, verdict: Verdict | None, text: str
) -> None:
    assert margin_text(margin, verdict) == text
