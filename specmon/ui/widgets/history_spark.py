"""A sparkline of a bounded history at a fixed width per point, filling from the right, under a
caption that says what it plots and its range.

Textual's Sparkline stretches whatever data it has over its whole width: two points of a
5-minute history drew a solid block. Here each point keeps the width a full history would give
it, and the line grows leftwards as the history fills. The caption shows where the row has room
for it (the `-tall` layout); elsewhere it is the sparkline's tooltip.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.renderables.sparkline import Sparkline as SparklineRenderable
from textual.visual import VisualType
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


class RightSparkline(Sparkline):
    """A Sparkline as wide as its row that draws its line in the last `cells` cells only.

    The line grows by repainting this widget: resizing the widget instead laid the whole
    screen out again at every new point (every 5 s for the first 5 minutes), most of
    specmon's CPU while idle (docs/performance.md).
    """

    DEFAULT_CSS = "RightSparkline { width: 1fr; }"

    cells: reactive[int] = reactive(0)
    """Cells the line takes, at the right edge."""

    def render(self) -> VisualType:
        """Blank on the left, then Textual's sparkline `cells` wide."""
        line = super().render()
        assert isinstance(line, SparklineRenderable)
        line.width = min(self.cells, self.size.width)
        return _RightAligned(line, self.size.width - line.width)


class _RightAligned:
    """A renderable drawn after `pad` blank cells on each of its lines."""

    def __init__(self, inner: SparklineRenderable[float], pad: int) -> None:
        self.inner = inner
        self.pad = pad

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        blank = Segment(" " * self.pad)
        for row, line in enumerate(Segment.split_lines(console.render(self.inner, options))):
            if row:
                yield Segment.line()
            # Cells of one style in one segment: the rows above the bars are a cell each
            # otherwise, and Textual's cost of a repaint goes by segments.
            yield from Segment.simplify([blank, *line])


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

    def plot(self, data: tuple[float, ...], capacity: int, caption: str = "") -> None:
        """Show `data` (oldest first) of a history that holds at most `capacity` points, with
        its `caption` (kept from the last call when empty)."""
        self._data, self._capacity = data, capacity
        if caption:
            quiet.show(self.query_one(".caption", Static), caption)
            quiet.tooltip(self.query_one(RightSparkline), caption)
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
