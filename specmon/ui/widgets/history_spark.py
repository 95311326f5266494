"""A sparkline of a bounded history at a fixed width per point, filling from the right, under a
caption that says what it plots and its range.

Textual's Sparkline stretches whatever data it has over its whole width: two points of a
5-minute history drew a solid block. Here each point keeps the width a full history would give
it, and the line grows leftwards as the history fills. The caption shows where the row has room
for it (the `-tall` layout); elsewhere it is the sparkline's tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

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
    `values`; the smallest value an eighth of the bottom row, the largest the full height.
    Nothing above zero (an idle server's 0 tok/s) draws no bar: Textual's full-height bar of a
    lone value would show a 0–0 range as a peak."""
    if not values or width <= 0 or height <= 0:
        return [""] * max(height, 0)
    if max(values) <= 0:
        return [" " * width] * height
    if len(values) == 1:
        return ["█" * width] * height
    low, high = min(values), max(values)
    extent = high - low or 1
    eighths = len(BARS) * height - 1
    count = len(values)
    tops = []
    for cell in range(width):  # its share: from count * cell / width to count * (cell + 1) / width
        start = count * cell // width
        share = values[start : max(count * (cell + 1) // width, start + 1)]
        tops.append(int((max(share) - low) / extent * eighths))
    rows = []
    for row in reversed(range(height)):
        bottom = row * len(BARS)
        rows.append(
            "".join(
                " " if top < bottom else "█" if top >= bottom + len(BARS) else BARS[top - bottom]
                for top in tops
            )
        )
    return rows


BRAILLE_FROM_ROWS = 8
"""Charts at least this tall are drawn in braille (`braille_rows`), as btop draws its graphs:
two points a cell and four levels a row, where a tall block chart was columns of solid bars."""

_DOTS = ((0x40, 0x04, 0x02, 0x01), (0x80, 0x20, 0x10, 0x08))
"""Braille's dot bits, bottom dot first, of a cell's left and right column (U+2800 + bits)."""


def _shares(values: Sequence[float], columns: int) -> list[float]:
    """The largest value of each column's share of `values` (as Textual's Sparkline does)."""
    count = len(values)
    out = []
    for column in range(columns):
        start = count * column // columns
        out.append(max(values[start : max(count * (column + 1) // columns, start + 1)]))
    return out


def braille_rows(values: Sequence[float], width: int, height: int) -> list[str]:
    """The rows (top first) of a filled braille graph of `values`, `width` cells wide (two
    columns of dots each) and `height` tall (four dots each): the smallest value one dot, the
    largest the full height, a lone (or constant) value full; nothing above zero draws
    nothing."""
    if not values or width <= 0 or height <= 0 or max(values) <= 0:
        return [" " * max(width, 0)] * max(height, 0)
    dots = 4 * height
    low, high = min(values), max(values)
    extent = high - low
    tops = [
        1 + int((v - low) / extent * (dots - 1)) if extent else dots
        for v in _shares(values, 2 * width)
    ]
    rows = []
    for row in reversed(range(height)):
        bottom = 4 * row
        cells = []
        for cell in range(width):
            bits = 0
            for side, top in enumerate(tops[2 * cell : 2 * cell + 2]):
                for dot in range(min(4, max(0, top - bottom))):
                    bits |= _DOTS[side][dot]
            cells.append(chr(0x2800 + bits) if bits else " ")
        rows.append("".join(cells))
    return rows


def scaled(rows: list[str], high: str, low: str) -> list[str]:
    """`rows` with the graph's scale at the left of its top and bottom rows (`high`, `low`),
    where the line has not reached: the history fills from the right."""
    if len(rows) < 2:
        return rows
    out = list(rows)
    for at, label in ((0, high), (-1, low)):
        row = out[at]
        if len(label) < len(row) - len(row.lstrip(" ")):
            out[at] = label + row[len(label) :]
    return out


MARK = "┃"
"""A restart or config change on the sparkline's time axis (its bottom row)."""


def marked(row: str, marks: tuple[int, ...], points: int) -> str:
    """The bottom `row` of a line of `points` with `MARK` in a cell of each marked point
    (counted from the newest, which ends the row)."""
    cells = list(row)
    for mark in marks:
        if cells and mark < points:
            cells[len(cells) - 1 - mark * len(cells) // points] = MARK
    return "".join(cells)


class HistorySpark(Widget):
    """A sparkline that fills from the right, under its caption where the stylesheet shows it
    (`history-spark--caption`'s `display`), the bars in one colour (`history-spark--bars`).

    One widget, not a row holding a caption and a Sparkline: each widget costs every repaint
    its own lines and styles (a `t` at 160x50 draws them all). Each row of bars is one run of
    bar characters (`bar_rows`), not Textual's renderable, which coloured each cell apart (a
    blend from the min to the max colour by value) and so made a segment of every cell. The
    line grows by repainting this widget, never by a layout: resizing a widget laid the whole
    screen out again at every new point (every 5 s for the first 5 minutes), most of specmon's
    CPU while idle (docs/performance.md).
    """

    COMPONENT_CLASSES = {"history-spark--bars", "history-spark--caption"}

    def __init__(self, *, id: str) -> None:
        """Args:
        id: The widget's id (the stylesheet colours it).
        """
        super().__init__(id=id)
        self._data: tuple[float, ...] = ()
        self._capacity = 1
        self._digits = 0
        self._caption = ""
        self._cells = 0
        self._values: list[float] = []
        """Each point repeated over its cells: one value a cell."""
        self._marks: tuple[int, ...] = ()
        """Points from the newest (0) marked on the axis (`plot`)."""
        self._rows: tuple[tuple[int, int], list[str]] = ((0, 0), [])
        """`bar_rows` for (cells, height), made again when either or the values change."""
        self._looks: tuple[Style, Style, Style | None] | None = None
        """Blank, bars and caption (None: hidden) styles, found once a repaint."""

    def plot(
        self,
        data: tuple[float, ...],
        capacity: int,
        what: str = "",
        digits: int = 0,
        source: str = "",
        marks: tuple[int, ...] | None = None,
    ) -> None:
        """Show `data` (oldest first) of a history that holds at most `capacity` points, under
        its caption: `what` it plots, the range, to `digits` decimals, then where it comes from
        (`source`, the first to be cut off a narrow caption); kept from the last call when
        `what` is empty. `marks`: points counted from the newest (0) drawn as `MARK` on the
        bottom row (restarts and config changes); None keeps the last call's."""
        if marks is not None and marks != self._marks:
            self._marks = marks
            self._rows = ((0, 0), [])
            self.refresh()
        self._data, self._capacity = data, capacity
        if what:
            self._digits = digits
            span = f" · {min(data):.{digits}f}–{max(data):.{digits}f}" if data else ""
            caption = what + span + (f" ({source})" if source else "")
            if self._caption != caption:
                self._caption = caption
                self.refresh()
            quiet.tooltip(self, self._caption)
        width = self.content_size.width
        if not width:  # before the first layout: on_resize plots again
            return
        if self._braille:  # two points a cell
            width *= 2
        cells, per_point = spark_cells(len(data), capacity, width)
        values = [v for v in data for _ in range(per_point)]
        if (cells, values) != (self._cells, self._values):
            self._cells, self._values = cells, values
            self._rows = ((0, 0), [])
            self.refresh()

    @property
    def _braille(self) -> bool:
        """Whether the chart is tall enough for braille (`BRAILLE_FROM_ROWS`, its caption's row
        included)."""
        return self.size.height > BRAILLE_FROM_ROWS

    def on_resize(self) -> None:
        """Cells per point follow the width."""
        self.plot(self._data, self._capacity)

    def render_lines(self, crop: Region) -> list[Strip]:
        """Textual's, with this repaint's colours found once, not at every line."""
        self._looks = self._find_looks()
        return super().render_lines(crop)

    def _find_looks(self) -> tuple[Style, Style, Style | None]:
        _, base = self.background_colors
        background = base.rich_color

        def colour(component: str) -> Style:
            styles = self.get_component_styles(component)
            fore = base.get_contrast_text(styles.color.a) if styles.auto_color else styles.color
            return Style(color=(base + fore).rich_color, bgcolor=background)

        shown = self.get_component_styles("history-spark--caption").display != "none"
        return (
            Style(bgcolor=background),
            colour("history-spark--bars"),
            colour("history-spark--caption") if shown else None,
        )

    def render_line(self, y: int) -> Strip:
        """Row `y`: the caption (right-aligned) where shown, then blank on the left and the
        bars in the last `cells` cells."""
        width, height = self.size
        blank, bars, caption = self._looks or self._find_looks()
        if caption is not None:
            if y == 0:
                text = Text(self._caption, end="")
                text.truncate(width, overflow="ellipsis")
                return Strip(
                    [Segment(" " * (width - text.cell_len), blank), Segment(text.plain, caption)],
                    width,
                )
            y, height = y - 1, height - 1
        braille = self._braille
        cells = min(-(-self._cells // 2) if braille else self._cells, width)
        if self._rows[0] != (cells, height):
            self._rows = ((cells, height), self._draw(cells, height, braille, width))
        rows = self._rows[1]
        if y >= len(rows) or not rows[y].strip():
            return Strip([Segment(" " * width, blank)], width)
        line, left = rows[y], width - cells
        scale = caption or bars  # the braille chart's range, where the line has not reached
        return Strip([Segment(line[:left], scale), Segment(line[left:], bars)], width)

    def _draw(self, cells: int, height: int, braille: bool, width: int) -> list[str]:
        """The chart's rows, each `width` wide: blank on the left, the line in the last `cells`
        cells; a braille chart's scale (its range) at the left of its top and bottom rows."""
        if not cells:
            return []
        rows = (braille_rows if braille else bar_rows)(self._values, cells, height)
        if rows and self._marks:
            rows[-1] = marked(rows[-1], self._marks, len(self._data))
        rows = [" " * (width - cells) + row for row in rows]
        if braille and self._data and max(self._data) > 0:
            rows = scaled(
                rows, f"{max(self._data):.{self._digits}f}", f"{min(self._data):.{self._digits}f}"
            )
        return rows
