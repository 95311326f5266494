"""The fleet table: one row per server, worst first; Enter opens that server's dashboard.

It renders the rows `FleetRowsReady` brings (session/fleet_row.py: every figure is the server's
View's) and nothing else. The columns follow the width (ui/columns.py): which server, its state
and why, its decode tok/s, speedup and baseline always; the rest while they fit. The highlighted
row's reason is written out in full below the table.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from specmon.session.fleet_row import FleetRow
from specmon.ui.columns import Column, cut, fit
from specmon.ui.format import DASH, escape, num
from specmon.ui.messages import FleetRowsReady
from specmon.ui.widgets import quiet

COLUMNS = (
    Column("state", "state", essential=True),
    Column("server", "server", essential=True, min_width=8, preferred=24),
    Column("software", "software", rank=2),
    Column("speculation", "speculation", rank=3),
    Column("decode", "tok/s", essential=True),
    Column("accept", "accept", rank=0),
    Column("cycle", "cycle ms", rank=1),
    Column("speedup", "speedup", essential=True),
    Column("baseline", "baseline", essential=True, min_width=1),
    Column("gpu", "GPUs", essential=True, min_width=4, preferred=18),
    Column("why", "why", essential=True, min_width=6, preferred=20),
)
"""Table order. Essential: which server, whether it is up and why it ranks where it does, its
speed, the speedup with whether its baseline holds, and its GPUs' worst."""


def _cells(row: FleetRow) -> tuple[str, ...]:
    """A row's texts, in COLUMNS order."""
    return (
        row.state.upper() if row.state == "down" else row.state,
        row.label,
        row.title or DASH,
        row.speculation,
        num(row.decode_tok_s),
        num(row.accept_length, ".2f"),
        num(row.cycle_ms, ".1f"),
        f"{row.speedup:+.1%}" if row.speedup is not None else DASH,
        row.baseline,
        row.gpu or DASH,
        row.reason or DASH,
    )


class FleetScreen(Screen[str]):
    """Every server's row; dismisses with the URL of the one to open."""

    BINDINGS = [Binding("enter", "open", "open", priority=True)]

    def __init__(self, count: int) -> None:
        """Args:
        count: How many servers the fleet has (for the title before the first rows).
        """
        super().__init__()
        self.count = count
        self.rows: tuple[FleetRow, ...] = ()
        self.cells: list[tuple[str, ...]] = []
        self._shown: tuple[list[int], list[tuple[str, ...]]] = ([], [])

    def compose(self) -> ComposeResult:
        """Title, table, the highlighted row's reason, keys."""
        yield Static(f"specmon · {self.count} servers, worst first", id="fleet-title")
        yield DataTable(id="fleet-table", zebra_stripes=True, cursor_type="row")
        yield Static(id="fleet-row")
        yield Static("↑↓: choose · Enter: open its dashboard (Esc there: back) · q: quit",
                     id="fleet-keys")  # fmt: skip

    @on(FleetRowsReady)
    def _on_rows(self, message: FleetRowsReady) -> None:
        self.rows = message.rows
        self.cells = [_cells(row) for row in self.rows]
        self._fill()

    def on_resize(self) -> None:
        """Choose the columns for the new width."""
        self.call_after_refresh(self._fill)

    def _fill(self) -> None:
        """The essential columns always, the others while they fit; the cursor stays on its
        server when the order changes."""
        table = self.query_one(DataTable)
        available = table.content_size.width - table.styles.scrollbar_size_vertical
        if available <= 0:
            return
        widths = fit(COLUMNS, self.cells, available)
        if (widths, self.cells) == self._shown:
            return
        highlighted = self._highlighted()
        if widths != self._shown[0]:
            table.clear(columns=True)
            for i, width in enumerate(widths):
                if width:
                    table.add_column(COLUMNS[i].label, width=width, key=COLUMNS[i].key)
        else:
            table.clear()
        self._shown = (widths, self.cells)
        shown = [(i, w) for i, w in enumerate(widths) if w]
        for row, cells in zip(self.rows, self.cells, strict=True):
            table.add_row(*(Text(cut(cells[i], width)) for i, width in shown), key=row.url)
        urls = [row.url for row in self.rows]
        if urls:
            table.move_cursor(row=urls.index(highlighted) if highlighted in urls else 0)
            self._show_row(table.cursor_row)

    def _highlighted(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return str(key.value) if key.value is not None else None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Follow the cursor."""
        self._show_row(event.cursor_row)

    def _show_row(self, index: int) -> None:
        """The row's server and reason in full: the table may have cut them."""
        if 0 <= index < len(self.rows):
            row = self.rows[index]
            text = f"{row.url} · {row.state}" + (f": {row.reason}" if row.reason else "")
            quiet.show(self.query_one("#fleet-row", Static), escape(text))

    def action_open(self) -> None:
        """Enter: that server's dashboard."""
        url = self._highlighted()
        if url is not None:
            self.dismiss(url)
