"""A sparkline of a bounded history at a fixed width per point, filling from the right.

Textual's Sparkline stretches whatever data it has over its whole width: two points of a
5-minute history drew a solid block. Here each point keeps the width a full history would give
it, and the line grows leftwards as the history fills.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Sparkline


def spark_cells(points: int, capacity: int, width: int) -> tuple[int, int]:
    """(cells the line takes, cells per point) for `points` of a history of `capacity` points.

    A full history fills `width`; a wider area than the history gives each point several cells,
    a narrower one has the Sparkline summarise (one cell per point, at most `width`).
    """
    if points <= 0 or width <= 0:
        return 0, 1
    per_point = max(1, width // max(1, capacity))
    return min(width, points * per_point), per_point


class HistorySpark(Horizontal):
    """A right-aligned Sparkline (id `spark_id`) whose width follows the history's length."""

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
        """The sparkline alone."""
        yield Sparkline([], id=self.spark_id)

    def plot(self, data: tuple[float, ...], capacity: int) -> None:
        """Show `data` (oldest first) of a history that holds at most `capacity` points."""
        self._data, self._capacity = data, capacity
        width = self.content_size.width
        if not width:  # before the first layout: on_resize plots again
            return
        spark = self.query_one(Sparkline)
        cells, per_point = spark_cells(len(data), capacity, width)
        spark.display = cells > 0
        if spark.styles.width is None or spark.styles.width.value != cells:
            spark.styles.width = cells
        # Each point repeated over its cells: the Sparkline maps one value to one cell then.
        values = [v for v in data for _ in range(per_point)]
        if spark.data != values:
            spark.data = values

    def on_resize(self) -> None:
        """Cells per point follow the width."""
        self.plot(self._data, self._capacity)
