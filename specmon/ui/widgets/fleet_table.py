"""The fleet table's rows: a table that draws only the lines on screen.

Textual's DataTable measures every cell of every row it is given and renders each cell through
Rich, so a fleet of 500 servers cost its screen ~150 ms each time their order changed (a row
changes rank most seconds) and ~50 ms each time a line changed. Here the screen hands over the
column widths (`ui/columns.py` chose them) and each row's cut texts; a line is drawn from them
when it is on screen (Textual's Line API: `render_line`), and kept until its row, its stripe,
the cursor or the styles change. Showing new rows costs a comparison of texts and the repaint of
the lines that changed, whatever the number of rows.

It looks as the DataTable did (its stylesheet, with the zebra stripes and a row cursor, is
copied here under this widget's names); the hover highlight is not drawn.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from specmon.ui.columns import CELL_PADDING

Cell = tuple[str, str]
"""A cell's text, cut to its column's width, and its style ("" or e.g. "dim")."""
Header = tuple[str, str, int]
"""A shown column's key, label and width (without the padding)."""

PAD = CELL_PADDING // 2


@functools.lru_cache(maxsize=8192)
def _where(row: int, column: int, *, out_of_bounds: bool = False) -> Style:
    """The cell's place as DataTable marks it (style meta, which also keeps cells apart in a
    screenshot): one Style each, so that Rich's cached sums of styles are found again."""
    meta: dict[str, object] = {"row": row, "column": column}
    if out_of_bounds:
        meta["out_of_bounds"] = True
    return Style.from_meta(meta)


class FleetTable(ScrollView, can_focus=True):
    """Rows of cells under a header, one line each, with a row cursor; cost by lines shown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home", "first", "Top", show=False),
        Binding("end,ctrl+end", "last", "Bottom", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "fleet-table--header",
        "fleet-table--cursor",
        "fleet-table--even-row",
        "fleet-table--odd-row",
    }

    DEFAULT_CSS = """
    FleetTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;

        &:focus {
            background-tint: $foreground 5%;
            & > .fleet-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .fleet-table--header {
                background-tint: $foreground 5%;
            }
        }
        &:dark > .fleet-table--even-row {
            background: $surface-darken-1 40%;
        }
        & > .fleet-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .fleet-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .fleet-table--odd-row {
        }
        & > .fleet-table--even-row {
            background: $surface-lighten-1 50%;
        }
        & > .fleet-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """
    """DataTable's stylesheet, for the parts this table draws (Textual 8)."""

    class RowHighlighted(Message):
        """The cursor moved to another row (or the rows under it changed)."""

        def __init__(self, table: FleetTable, cursor_row: int) -> None:
            super().__init__()
            self.table = table
            self.cursor_row = cursor_row

        @property
        def control(self) -> FleetTable:
            return self.table

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns: tuple[Header, ...] = ()
        """The shown columns, left to right."""
        self.rows: list[tuple[Cell, ...]] = []
        """Each row's cells, in the columns' order."""
        self._cursor = 0
        self._lines: dict[tuple[object, ...], Strip] = {}
        """Drawn lines, by what they were drawn from."""

    @property
    def row_count(self) -> int:
        """How many rows the table holds."""
        return len(self.rows)

    @property
    def cursor_row(self) -> int:
        """The row the cursor is on (0 when there are none)."""
        return self._cursor

    def show(self, columns: Sequence[Header], rows: Sequence[tuple[Cell, ...]]) -> None:
        """Hold these columns and rows: repaint only the lines whose cells changed (all of them
        when the columns did). The cursor stays at its index (`move_cursor` moves it)."""
        columns, rows = tuple(columns), list(rows)
        if columns != self.columns or len(rows) != len(self.rows):
            self.columns, self.rows = columns, rows
            self._lines.clear()
            width = sum(w + CELL_PADDING for _, _, w in columns)
            self.virtual_size = Size(width, len(rows) + 1)
            self._cursor = max(0, min(self._cursor, len(rows) - 1))
            self.refresh()
            return
        before, self.rows = self.rows, rows
        for index, (now, was) in enumerate(zip(rows, before, strict=True)):
            if now != was:
                self._refresh_row(index)
        if len(self._lines) > 4 * max(self.size.height, 1):  # lines of rows since changed
            self._lines.clear()

    def move_cursor(self, row: int, *, scroll: bool = True) -> None:
        """Put the cursor on `row` (kept within the rows); say so if that is another row."""
        row = max(0, min(row, len(self.rows) - 1))
        before, self._cursor = self._cursor, row
        if row != before:
            self._refresh_row(before)
            self._refresh_row(row)
            self.post_message(self.RowHighlighted(self, row))
        if scroll:
            self._scroll_to_cursor()

    def _scroll_to_cursor(self) -> None:
        region = Region(int(self.scroll_x), self._cursor + 1, self.size.width, 1)
        self.scroll_to_region(region, animate=False, spacing=Spacing(top=1), force=True)

    def _refresh_row(self, index: int) -> None:
        y = index + 1 - int(self.scroll_y)
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def notify_style_update(self) -> None:
        """A theme or focus change: every line is drawn again."""
        super().notify_style_update()
        self._lines.clear()

    def render_line(self, y: int) -> Strip:
        """Line `y` of the widget: the header, else the row under it at this scroll."""
        width = self.size.width
        base = self.rich_style
        index = -1 if y == 0 else y - 1 + int(self.scroll_y)
        if index >= len(self.rows):
            return Strip.blank(width, base)
        cells = self._header() if index < 0 else self.rows[index]
        cursor = index == self._cursor and index >= 0
        stripe = "header" if index < 0 else ("odd-row" if index % 2 else "even-row")
        state = self.get_pseudo_class_state()
        key = (index, cells, stripe, cursor, width, int(self.scroll_x), base, state, self.columns)
        line = self._lines.get(key)
        if line is None:
            line = self._draw(index, cells, stripe, cursor, width, base)
            self._lines[key] = line
        return line

    def _header(self) -> tuple[Cell, ...]:
        return tuple((label, "") for _, label, _ in self.columns)

    def _draw(
        self,
        index: int,
        cells: tuple[Cell, ...],
        stripe: str,
        cursor: bool,
        width: int,
        base: Style,
    ) -> Strip:
        """One line as DataTable drew it: each cell padded one space each side in its row's
        style (under the cursor's, which also wins over the cell's colours), then the row's
        style to the right edge."""
        row_style = self.get_component_styles(f"fleet-table--{stripe}").rich_style
        over = Style.null()
        if cursor:
            cursor_style = self.get_component_rich_style("fleet-table--cursor")
            row_style += cursor_style
            over = Style.from_color(cursor_style.color, cursor_style.bgcolor)
        pad = " " * PAD
        segments: list[Segment] = []
        for column, ((text, style), (_, _, column_width)) in enumerate(
            zip(cells, self.columns, strict=True)
        ):
            where = _where(index, column)
            text = text[:column_width]
            fill = " " * (column_width - len(text))
            if style:
                segments.append(Segment(pad, row_style + where + over))
                segments.append(Segment(text, row_style + where + Style.parse(style) + over))
                segments.append(Segment(fill + pad, row_style + where + over))
            else:
                segments.append(Segment(pad + text + fill + pad, row_style + where + over))
        used = sum(w + CELL_PADDING for _, _, w in self.columns)
        edge = _where(index, 0, out_of_bounds=True)
        segments.append(Segment(" " * max(0, width - used), row_style + edge))
        strip = Strip(segments).crop(int(self.scroll_x), int(self.scroll_x) + width)
        return strip.adjust_cell_length(width, base).simplify()

    def action_cursor_up(self) -> None:
        self.move_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self._cursor + 1)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def action_page_down(self) -> None:
        self.move_cursor(self._cursor + self._page())

    def action_page_up(self) -> None:
        self.move_cursor(self._cursor - self._page())

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self.rows) - 1)

    def on_click(self, event: events.Click) -> None:
        """A click on a row puts the cursor there."""
        offset = event.get_content_offset(self)
        if offset is not None and offset.y >= 1:
            index = offset.y - 1 + int(self.scroll_y)
            if index < len(self.rows):
                self.move_cursor(index)
                event.stop()
