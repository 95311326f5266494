"""Issue 38: the headline, the speedup and its verdict, stays on screen at every size the README
says the dashboard works at (40x12 and up); it was gone at 12 rows at any width and at 40
columns below 18 rows.

One app, live resizes through a sample of the 40–200 x 12–60 range (every edge, the sizes
issue 38 named, and sizes between), with every screen opened, resized under and closed first.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from test_dashboard import healthy
from test_sizes import resize_through
from textual.pilot import Pilot

from specmon.ui.app import SpecmonApp
from specmon.ui.dump import screen_text
from specmon.ui.widgets.baseline_panel import BaselinePanel
from specmon.wording import speedup_text, verdict_text

WIDTHS = (40, 41, 47, 59, 60, 61, 79, 80, 120, 159, 160, 200)
HEIGHTS = (12, 13, 14, 15, 17, 18, 19, 20, 24, 29, 30, 39, 40, 50, 60)
SCREENS = ("question_mark", "i", "c", "w")  # help, why —, compare, what-if


def _baseline_panel_text(app: SpecmonApp) -> str:
    """What the screen shows inside the Baseline panel (its region of the frame as text)."""
    text = screen_text(app)
    assert text is not None
    region = app.query_one(BaselinePanel).region
    rows = text.splitlines()[region.y : region.bottom]
    return "\n".join(row[region.x : region.right] for row in rows)


async def _headline_in_view(pilot: Pilot[None], size: tuple[int, int]) -> None:
    app: SpecmonApp = pilot.app  # type: ignore[assignment]
    await resize_through(pilot, [size])
    await pilot.pause()
    comparison = app.session.view().baseline.comparison
    assert comparison is not None
    speedup = speedup_text(comparison.speedup, interval=False)
    shown = _baseline_panel_text(app)
    assert speedup in shown and verdict_text(comparison) in shown, f"at {size}:\n{shown}"


@pytest.mark.slow
async def test_the_speedup_and_its_verdict_stay_in_view_at_every_size(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await healthy()(pilot)
        for key in SCREENS:  # each screen open through resizes, then closed
            await pilot.press(key)
            assert app.screen is not app.screen_stack[0], f"{key} opened nothing"
            await resize_through(pilot, [(40, 12), (200, 60), (60, 15)])
            await pilot.press("escape")
            await _headline_in_view(pilot, (80, 24))
        for width in WIDTHS:
            for height in HEIGHTS if width % 2 else reversed(HEIGHTS):  # up and down
                await _headline_in_view(pilot, (width, height))
