"""A sparkline of a bounded history at a fixed width per point, filling from the right, under a
caption that says what it plots and its range.

Textual's Sparkline stretches whatever data it has over its whole width: two points of a
5-minute history drew a solid block. Here each point keeps the width a full history would give
it, and the line grows leftwards as the history fills. The caption shows where the row has room
for it (the `-tall` layout); elsewhere it is the sparkline's tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.strip import Strip
from textual.widgets import Sparkline, Static

from specmon.ui.widgets import quiet


def spark_cells(points: int, capacity: int, width: int) -> tuple[int, int]:
    """(cells the line takes, cells per point) for `points` of a history of `capacity` points.

    A full history fills `width`; a wider area than the history gives each point several cells,
    a narrower one has the Sparkline summarise (one cell per point, at most `width`).
    """
    if points <= 0 or width <= 0:
        return 0, 1
    per_point = max(1, width // max(1, capacity))
    return min(width, points * per_point), per_point


BARS = "▁▂▃▄▅▆▇█"
"""Textual's Sparkline's eighths (textual/renderables/sparkline.py)."""


def bar_rows(values: Sequence[float], width: int, height: int) -> list[str]:
    """The rows (top first) of a sparkline of `values`, `width` cells wide and `height` tall,
    as Textual's Sparkline draws its bars: each cell the largest value of its share of
    `values`; the smallest value an eighth of the bottom row, the largest the full height."""
    if not values or width <= 0 or height <= 0:
        return [""] * max(height, 0)
    if len(values) == 1:
        return ["█" * width] * height
    low, high = min(values), max(values)
    extent = high - low or 1
    eighths = len(BARS) * height - 1
    step = Fraction(len(values), width)
    tops = []
    for cell in range(width):
        start = int(step * cell)
        share = values[start : max(int(step * (cell + 1)), start + 1)]
        tops.append(int((max(share) - low) / extent * eighths))
    rows = []
    for row in reversed(range(height)):
        bottom = row * len(BARS)
        rows.append("".join(" " if top < bottom else "█" if top >= bottom + len(BARS)
                            else BARS[top - bottom] for top in tops))  # fmt: skip
    return rows


class RightSparkline(Sparkline):
    """A Sparkline as wide as its row that draws its bars in the last `cells` cells only, in
    one colour (its `sparkline--max-color`).

    The line grows by repainting this widget: resizing the widget instead laid the whole
    screen out again at every new point (every 5 s for the first 5 minutes), most of
    specmon's CPU while idle (docs/performance.md). Each row is one run of bar characters
    (`bar_rows`), not Textual's renderable, which coloured each cell apart (a blend from the
    min to the max colour by value) and so made a segment of every cell: with full 5-minute
    histories at 160x50, half of a full repaint's time.
    """

    DEFAULT_CSS = "RightSparkline { width: 1fr; }"

    cells: reactive[int] = reactive(0)
    """Cells the line takes, at the right edge."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As Textual's Sparkline."""
        super().__init__(*args, **kwargs)
        self._drawn: tuple[tuple[object, ...], list[str]] = ((), [])

    def render_line(self, y: int) -> Strip:
        """Row `y`: blank on the left, then the bars, `cells` wide."""
        width, height = self.size
        cells = min(self.cells, width)
        key = (tuple(self.data or ()), cells, height)
        if self._drawn[0] != key:
            self._drawn = (key, bar_rows(self.data or (), cells, height))
        rows = self._drawn[1]
        _, base = self.background_colors
        blank = Style(bgcolor=base.rich_color)
        if y >= len(rows) or not cells:
            return Strip([Segment(" " * width, blank)], width)
        colour = base + self.get_component_styles("sparkline--max-color").color
        bars = Style(color=colour.rich_color, bgcolor=base.rich_color)
        return Strip([Segment(" " * (width - cells), blank), Segment(rows[y], bars)], width)


class HistorySpark(Horizontal):
    """A right-aligned Sparkline (id `spark_id`) whose width follows the history's length,
    under its caption (class `caption`)."""

    def __init__(self, spark_id: str, *, id: str) -> None:
        """Args:
        spark_id: The Sparkline's id (the stylesheet colours it).
        id: This container's id.
        """
        super().__init__(id=id)
        self.spark_id = spark_id
        self._data: tuple[float, ...] = ()
        self._capacity = 1

    def compose(self) -> ComposeResult:
        """The caption, then the sparkline."""
        yield Static(classes="caption")
        yield RightSparkline([], id=self.spark_id)

    def plot(self, data: tuple[float, ...], capacity: int, what: str = "", digits: int = 0) -> None:
        """Show `data` (oldest first) of a history that holds at most `capacity` points, under
        its caption: `what` it plots and the range, to `digits` decimals (kept from the last
        call when `what` is empty)."""
        self._data, self._capacity = data, capacity
        if what:
            span = f" · {min(data):.{digits}f}–{max(data):.{digits}f}" if data else ""
            quiet.show(self.query_one(".caption", Static), what + span)
            quiet.tooltip(self.query_one(RightSparkline), what + span)
        width = self.content_size.width
        if not width:  # before the first layout: on_resize plots again
            return
        spark = self.query_one(RightSparkline)
        cells, per_point = spark_cells(len(data), capacity, width)
        spark.display = cells > 0
        spark.cells = cells
        # Each point repeated over its cells: the Sparkline maps one value to one cell then.
        values = [v for v in data for _ in range(per_point)]
        if spark.data != values:
            spark.data = values

    def on_resize(self) -> None:
        """Cells per point follow the width."""
        self.plot(self._data, self._capacity)
