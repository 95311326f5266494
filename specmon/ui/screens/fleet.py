"""The fleet table: one row per server, worst first; Enter opens that server's dashboard; `o`
sorts by another column, `/` keeps the servers whose name or address holds a text.

It renders the rows `FleetRowsReady` brings (session/fleet_row.py: every figure is the server's
View's) and nothing else. The columns follow the width (ui/columns.py), chosen again at each resize:
which server, its state, its decode tok/s, speedup and baseline always; the rest by rank while
they fit. The highlighted row's reason and GPUs are written out in full below the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from specmon.analysis.catalogue import figure
from specmon.session.fleet_order import ORDERS, next_order, ordered
from specmon.session.fleet_row import FleetRow
from specmon.session.view import RECENT_PROBES
from specmon.ui.columns import Column, cut, cut_middle, fit
from specmon.ui.fitting import left_out
from specmon.ui.format import DASH, escape
from specmon.ui.messages import FleetRowsReady
from specmon.ui.screens.filter_prompt import FilterPrompt
from specmon.ui.screens.while_open import after_refresh
from specmon.ui.widgets import quiet
from specmon.ui.widgets.fleet_table import FleetTable
from specmon.wording import NO_SPEC

COLUMNS = (
    Column("server", "server", essential=True, min_width=12),
    Column("state", "state", essential=True, preferred=5),
    Column("software", "software", rank=4),
    Column("speculation", "spec", rank=1),
    Column("decode", "tok/s", essential=True),
    Column("accept", "accept", rank=0),
    Column("cycle", "cycle", rank=2),  # in ms (the title says so): "cycle ms" missed 80x24
    Column("speedup", "speedup", essential=True),
    Column("baseline", "baseline", essential=True),
    Column("gpu", "GPUs", rank=3),
    Column("why", "why", rank=5, min_width=12),
)
"""Table order. Always there: which server (grown to its full name first), whether it is up,
its speed, the speedup and whether its baseline holds; then, while they fit, accept length,
spec config, cycle time, the worst GPU, software and why the row ranks where it does (the
highlighted row's reason and GPUs are written out in full under the table)."""
FROM_READINGS = frozenset(
    {"software", "speculation", "decode", "accept", "cycle", "speedup", "baseline", "gpu"}
)
"""The columns a server that is down, or whose readings are stale, shows its last values in,
dimmed: what it was doing, not what it does."""

DECODE, ACCEPT, CYCLE = figure("decode tok/s"), figure("accept length"), figure("cycle")
SPEEDUP = figure("speedup")
"""The catalogue's figures (`analysis.catalogue`), in columns headed by them."""

KEYS = (("Enter", "open"), ("o", "sort"), ("/", "filter"), ("w", "what-if"), ("f", "freeze"),
        ("d", "dump"), ("t", "theme"), ("?", "help"), ("q", "quit"))  # fmt: skip
"""The table's keys line, in its order (Esc does nothing on the table: not listed)."""
TABLE_KEYS = frozenset(("Enter", "o", "/", "q"))
"""The keys the table itself serves, with its app's `q`: all an app without the dashboard's
keys (`--prometheus`) offers."""
HIDDEN_FIRST = ("t", "d", "f", "/", "o", "w", "Enter", "q", "?")
"""Which keys the line leaves to `?` first when the width is short."""
FROZEN = "FROZEN: f resumes"


def keys_line(width: int, *, frozen: bool = False, offered: frozenset[str] | None = None) -> str:
    """`Enter open · o sort · … · ? help · q quit`, as many keys as fit `width` (`?` lists
    them all); frozen, it starts with FROZEN (and `f` is said there); only the keys `offered`
    where the app serves fewer than KEYS."""
    keys = [
        (key, word)
        for key, word in KEYS
        if not (frozen and key == "f") and (offered is None or key in offered)
    ]
    head = [FROZEN] if frozen else []

    def text(hidden: frozenset[str]) -> str:
        return " · ".join(head + [f"{key} {word}" for key, word in keys if key not in hidden])

    return text(left_out(HIDDEN_FIRST, lambda hidden: len(text(hidden)) <= width))


@dataclass
class TableChoice:
    """What the user chose on the table, kept while a server's dashboard is shown: the table
    comes back as it was left (its order was reset to worst first)."""

    order: str = ORDERS[0][0]
    """`o`: the rows' order (`fleet_order.ORDERS`)."""
    filter: str = ""
    """`/`: only the servers whose name or address holds it."""
    opened: str | None = None
    """The server last opened: the cursor is back on it."""


def _cells(row: FleetRow) -> tuple[str, ...]:
    """A row's texts, in COLUMNS order."""
    # The speedup's value alone, a signed percent to one decimal: the row carries no interval
    # (the speedup's text, with its interval and the decimals it may need, is the dashboard's).
    speedup = NO_SPEC if row.speculative is False else SPEEDUP.value_text(row.speedup)
    # An adaptive server drafting otherwise than its flags at this load says so after them.
    now = f" →{row.drafting_differs}" if row.drafting_differs else ""
    return (
        row.label,
        row.state.upper() if row.state == "down" else row.state,
        row.title or DASH,
        row.speculation + now,
        DECODE.value_text(row.decode_tok_s, unit=False),
        ACCEPT.value_text(row.accept_length, unit=False),
        CYCLE.value_text(row.cycle_ms, unit=False),
        speedup,
        row.baseline,
        row.gpu or DASH,
        row.reason or DASH,
    )


def _old(row: FleetRow) -> bool:
    """The server is down or its readings are stale: its figures are its last ones."""
    return row.state in ("down", "stale")


def _shown_cells(
    cells: tuple[str, ...], shown: list[tuple[int, int]], old: bool
) -> tuple[tuple[str, str], ...]:
    """(text, style) of each shown column (index, width): cut to its width, dimmed where it is
    the last value of a server that is down or whose readings are stale (`old`)."""
    out = []
    for i, width in shown:
        key = COLUMNS[i].key
        text = (cut_middle if key == "server" else cut)(cells[i], width)
        out.append((text, "dim" if old and key in FROM_READINGS else ""))
    return tuple(out)


class FleetScreen(Screen[str]):
    """Every server's row; dismisses with the URL of the one to open."""

    class Highlighted(Message):
        """The cursor is on another server (or on the first, once there are rows): an app that
        reads that server's history (`specmon --prometheus`) reads it then."""

        def __init__(self, url: str) -> None:
            super().__init__()
            self.url = url

    BINDINGS = [
        Binding("enter", "open", "open", priority=True),
        Binding("o", "order", "sort"),
        Binding("slash", "filter", "filter"),
    ]

    def __init__(
        self,
        count: int,
        *,
        frozen: bool = False,
        choice: TableChoice | None = None,
        offered: frozenset[str] | None = None,
    ) -> None:
        """Args:
        count: How many servers the fleet has (for the title before the first rows).
        frozen: The dashboard is frozen (`f`): the keys line says so.
        choice: The order, filter and server chosen on the table before (the app's, kept
            while a server's dashboard is shown).
        offered: The keys of KEYS its app serves (`TABLE_KEYS` without the dashboard's);
            None: all of them.
        """
        super().__init__()
        self.count = count
        self.frozen = frozen
        self.offered = offered
        self.choice = choice if choice is not None else TableChoice()
        self.all_rows: tuple[FleetRow, ...] = ()
        """Every server's row, as the app brought them."""
        self.rows: tuple[FleetRow, ...] = ()
        """The rows shown: those matching the filter, in the order chosen."""
        self.cells: list[tuple[str, ...]] = []
        self._cells_of: dict[FleetRow, tuple[str, ...]] = {}
        self._texts_of: dict[tuple[tuple[str, ...], bool], tuple[tuple[str, str], ...]] = {}
        self._texts_shown: list[tuple[int, int]] = []
        """The texts of the rows shown, kept from one reading to the next: most rows come
        again unchanged (500 servers probed every 10 s: 50 change a second), and their cells
        are not formatted and cut again."""
        self._urls: list[str] = []
        """The servers the table holds, in its order."""
        self._highlighted: str | None = None
        """The server the line under the table is of (`Highlighted` said when it changes)."""
        self.detail = ""
        """The text under the table: the highlighted row in full, its history where shown."""
        self._history: tuple[str, list[str]] | None = None
        """A server's history lines under its row (`show_history`), while it is highlighted."""

    def compose(self) -> ComposeResult:
        """Title, table, the highlighted row's reason, keys."""
        # The window of tok/s, accept, cycle and speedup: one for all four, as the exporter's.
        yield Static(self._heading(), id="fleet-title")
        yield FleetTable(id="fleet-table")
        yield Static(id="fleet-row")
        yield Static(id="fleet-keys")

    def on_mount(self) -> None:
        """The keys line, for the width it has."""
        after_refresh(self, self._write_keys)

    @property
    def order(self) -> str:
        """`o`: the rows' order (`fleet_order.ORDERS`)."""
        return self.choice.order

    @property
    def filter(self) -> str:
        """`/`: only the servers whose name or address holds it."""
        return self.choice.filter

    def show_frozen(self, frozen: bool) -> None:
        """Say on the keys line whether the table is frozen (`f`)."""
        self.frozen = frozen
        self._write_keys()

    def _write_keys(self) -> None:
        keys = self.query_one("#fleet-keys", Static)
        quiet.show(
            keys, escape(keys_line(keys.size.width or 80, frozen=self.frozen, offered=self.offered))
        )

    def _heading(self) -> str:
        """How many servers, in which order, under which filter; the window of the figures."""
        # The window of tok/s, accept, cycle and speedup: one for all four, as the exporter's.
        servers = f"{self.count} servers"
        if self.filter:
            servers = f"{len(self.rows)} of {self.count} servers holding {self.filter!r}"
        order = self.order if self.order == ORDERS[0][0] else f"by {self.order}"
        return f"specmon · {servers}, {order} · last {RECENT_PROBES} probes pooled · cycle in ms"

    @on(FleetRowsReady)
    def _on_rows(self, message: FleetRowsReady) -> None:
        self.all_rows = message.rows
        self.count = len(message.rows)
        self._arrange()

    def _arrange(self) -> None:
        """The rows to show, by the order and filter chosen; the title says which."""
        self.rows = tuple(ordered(self.all_rows, self.order, self.filter))
        known = self._cells_of
        self._cells_of = {row: known.get(row) or _cells(row) for row in self.rows}
        self.cells = [self._cells_of[row] for row in self.rows]
        quiet.show(self.query_one("#fleet-title", Static), escape(self._heading()))
        self._fill()

    def action_order(self) -> None:
        """o: the next order (worst first, server, tok/s, speedup, accept, cycle)."""
        self.choice.order = next_order(self.order)
        self._arrange()

    def action_filter(self) -> None:
        """/: ask for the text a server's name or address must hold."""

        def apply(text: str | None) -> None:
            if text is not None:
                self.choice.filter = text
                self._arrange()

        self.app.push_screen(
            FilterPrompt("the servers whose name or address holds", self.filter), apply
        )

    def on_resize(self) -> None:
        """Choose the columns and the keys listed for the new width."""
        after_refresh(self, self._fill)
        after_refresh(self, self._write_keys)

    def _fill(self) -> None:
        """The essential columns always, the others while they fit; the cursor stays on its
        server when the order changes.

        The table (`FleetTable`) draws only the lines on screen, and of them only those whose
        texts changed: most seconds nothing shown changes (a hidden column's GPU temperature
        does), and nothing is drawn."""
        table = self.query_one(FleetTable)
        available = table.content_size.width
        if len(self.cells) + 1 > table.content_size.height:  # the header and the rows overflow
            available -= table.styles.scrollbar_size_vertical
        if available <= 0:
            return
        widths = fit(COLUMNS, self.cells, available)
        shown = [(i, w) for i, w in enumerate(widths) if w]
        known = self._texts_of if shown == self._texts_shown else {}
        self._texts_of, self._texts_shown = {}, shown
        texts = []
        for row, cells in zip(self.rows, self.cells, strict=True):
            key = (cells, _old(row))
            text = known.get(key) or _shown_cells(cells, shown, key[1])
            self._texts_of[key] = text
            texts.append(text)
        urls = [row.url for row in self.rows]
        highlighted = self.highlighted() or self.choice.opened
        before, self._urls = self._urls, urls
        table.show([(COLUMNS[i].key, COLUMNS[i].label, width) for i, width in shown], texts)
        if urls != before and urls:
            table.move_cursor(urls.index(highlighted) if highlighted in urls else 0)
        if urls:
            self._show_row(table.cursor_row)

    def highlighted(self) -> str | None:
        """The URL of the server the cursor is on."""
        index = self.query_one(FleetTable).cursor_row
        return self._urls[index] if index < len(self._urls) else None

    def on_fleet_table_row_highlighted(self, event: FleetTable.RowHighlighted) -> None:
        """Follow the cursor."""
        self._show_row(event.cursor_row)

    def _show_row(self, index: int) -> None:
        """The row's server, reason and GPUs in full (the table may have cut or left them
        out), then its history where the app brought it (`show_history`)."""
        if 0 <= index < len(self.rows):
            row = self.rows[index]
            text = f"{row.url} · {row.state}" + (f": {row.reason}" if row.reason else "")
            text += f"\nGPUs: {row.gpu_detail or DASH}"
            if self._history is not None and self._history[0] == row.url:
                text += "".join(f"\n{line}" for line in self._history[1])
            self.detail = text
            quiet.show(self.query_one("#fleet-row", Static), escape(text))
            if row.url != self._highlighted:
                self._highlighted = row.url
                self.post_message(self.Highlighted(row.url))

    def history_width(self) -> int:
        """Cells a history line under the table has."""
        return self.query_one("#fleet-row", Static).content_size.width or self.size.width or 80

    def show_history(self, url: str, lines: list[str]) -> None:
        """A server's history lines (ui/row_history.py), under its row while it is highlighted."""
        self._history = (url, lines)
        if self.highlighted() == url:
            self._show_row(self.query_one(FleetTable).cursor_row)

    def action_open(self) -> None:
        """Enter: that server's dashboard."""
        url = self.highlighted()
        if url is not None:
            self.choice.opened = url
            self.dismiss(url)
