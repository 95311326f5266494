"""`w`: what speculation would do at other draft lengths, and the advisor's findings.

The columns follow the width (ui/columns.py), as the comparison's do: k, decode, speedup,
break-even and the notes always; the flag, the intervals, tokens/step and cycle while they fit.
The highlighted row's columns that did not fit are written out below the table.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from specmon.ui.columns import Column, cut, fit
from specmon.ui.format import escape
from specmon.ui.screens.while_open import after_refresh
from specmon.ui.widgets import quiet
from specmon.whatif.live import WhatIfView
from specmon.whatif.text import (
    LABELS,
    band_what_if_lines,
    by_load_lines,
    row,
    summary,
)

COLUMNS = (  # LABELS' keys in LABELS' order
    Column("k", LABELS["k"], essential=True),
    Column("tokens", LABELS["tokens"], rank=3),
    Column("cycle", LABELS["cycle"], rank=4),
    Column("decode", LABELS["decode"], essential=True),
    Column("decode_interval", LABELS["decode_interval"], rank=2),
    Column("speedup", LABELS["speedup"], essential=True),
    Column("speedup_interval", LABELS["speedup_interval"], rank=1),
    Column("break_even", LABELS["break_even"], essential=True),
    # "best" always shows, at worst cut to "bes…"; "within interval" where a faster-predicted
    # length is not named best (`PASSED_OVER`) whole before the flag joins.
    Column("notes", LABELS["notes"], essential=True, min_width=4, preferred=len("within interval")),
    # What to launch with: first of the rest where it fits whole (60 cells for EAGLE's two flags).
    Column("flag", LABELS["flag"], rank=0),
)


class WhatIfScreen(ModalScreen[None]):
    """The predictions per draft length of the recent probes, then the findings."""

    BINDINGS = [
        Binding("escape,w,q", "dismiss", "Close"),
        # The findings and the by-load half run past a short terminal's last line: these
        # scroll the screen, not the table (a few rows: ↑↓ reach them all).
        Binding("pagedown,space", "scroll_notes('page_down')", "More", priority=True),
        Binding("pageup", "scroll_notes('page_up')", "Back", priority=True),
        Binding("end", "scroll_notes('end')", "End", priority=True),
        Binding("home", "scroll_notes('home')", "Top", priority=True),
    ]

    def __init__(self, view: WhatIfView) -> None:
        """Args:
        view: What to show (`whatif.live.live_what_if`).
        """
        super().__init__()
        self.view = view
        self.cells: list[dict[str, str]] = []
        """Each row's full texts, by column key."""
        self._widths: list[int] = []

    def compose(self) -> ComposeResult:
        """Title, table, the highlighted row's other columns, the lines under it, the findings."""
        with Vertical(id="whatif"):
            yield Static("What-if: other draft lengths, from the recent probes", id="whatif-title")
            yield DataTable(id="whatif-table", zebra_stripes=True, cursor_type="row")
            yield Static(id="whatif-row")
            yield Static(id="whatif-notes")
            yield Static("Esc: close", id="whatif-status")

    def on_mount(self) -> None:
        """The rows' texts and the notes; the table is filled once its width is known."""
        view, lines = self.view, []
        result = view.answer.result
        if view.info is not None and result is not None:
            best = result.choice.draft_tokens
            self.cells = [row(view.info, p, best, result) for p in result.predictions]
            lines += summary(view.info, result)
        else:
            self.query_one(DataTable).display = False
            lines.append(f"no prediction: {view.answer.reason}")
        if view.baseline_note:
            lines.append(f"speedup: {view.baseline_note}")
        for advice in view.advice:
            flag = f" — change {advice.flag}" if advice.flag else ""
            lines.append(f"{'!' if advice.level == 'warn' else '·'} {advice.text}{flag}")
            lines.append(f"    {advice.evidence}")
        if not view.advice:
            lines.append("advisor: nothing to change on this evidence")
        if view.info is not None and view.info.speculative is not None:
            lines += by_load_lines(view.by_load, view.ab, view.now_wall, view.url)
            lines += band_what_if_lines(view.info, view.band_what_ifs)
        self.query_one("#whatif-notes", Static).update(escape("\n".join(lines)))
        # Whether the screen runs past its last line is known once its content is laid out.
        self.watch(self.query_one("#whatif", Vertical), "virtual_size", self._status, init=False)

    def on_resize(self) -> None:
        """Choose the columns for the new width, then the keys for the new height."""
        after_refresh(self, self._fill)
        after_refresh(self, self._status)

    def action_scroll_notes(self, where: str) -> None:
        """Scroll the screen: `page_down`, `page_up`, `home` or `end`."""
        box = self.query_one("#whatif", Vertical)
        {
            "page_down": box.scroll_page_down,
            "page_up": box.scroll_page_up,
            "home": box.scroll_home,
            "end": box.scroll_end,
        }[where](animate=False)

    def _status(self) -> None:
        """The keys that apply: ↑↓ while the table leaves columns out, PgDn while the screen
        runs past its last line."""
        box = self.query_one("#whatif", Vertical)
        hidden = 0 in self._widths
        keys = ["↑↓: a row in full below"] if hidden else []
        if box.max_scroll_y > 0:
            keys.append("PgDn/PgUp: more")
        quiet.show(self.query_one("#whatif-status", Static), " · ".join([*keys, "Esc: close"]))

    def _fill(self) -> None:
        """The essential columns always, the others while they fit."""
        if not self.cells:
            return
        table = self.query_one(DataTable)
        available = table.content_size.width - table.styles.scrollbar_size_vertical
        texts = [[cells[c.key] for c in COLUMNS] for cells in self.cells]
        widths = fit(COLUMNS, texts, available)
        if widths == self._widths:
            return
        self._widths = widths
        cursor = table.cursor_row
        table.clear(columns=True)
        shown = [(column, width) for column, width in zip(COLUMNS, widths, strict=True) if width]
        for column, width in shown:
            table.add_column(column.label, width=width, key=column.key)
        for cells in self.cells:
            table.add_row(*(Text(cut(cells[column.key], width)) for column, width in shown))
        after_refresh(self, self._status)
        table.move_cursor(row=min(cursor, len(self.cells) - 1))
        self._show_row(table.cursor_row)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Follow the cursor."""
        self._show_row(event.cursor_row)

    def _show_row(self, index: int) -> None:
        """The highlighted row's columns that the table left out or cut, in full."""
        if not 0 <= index < len(self.cells):
            return
        cells = self.cells[index]
        rest = [
            f"{column.label} {cells[column.key]}".strip()
            for column, width in zip(COLUMNS, self._widths, strict=True)
            if width < len(cells[column.key])
        ]
        line = self.query_one("#whatif-row", Static)
        line.display = bool(rest)
        quiet.show(line, escape(f"k = {cells['k']}: " + " · ".join(rest)))
