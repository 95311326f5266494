"""`w`: what speculation would do at other draft lengths, and the advisor's findings."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from specmon.session.whatif_view import WhatIfView
from specmon.ui.format import escape
from specmon.whatif_text import HEADERS, row, summary


class WhatIfScreen(ModalScreen[None]):
    """The predictions per draft length of the recent probes, then the findings."""

    BINDINGS = [Binding("escape,w,q", "dismiss", "Close")]

    def __init__(self, view: WhatIfView) -> None:
        """Args:
        view: What to show (`session.whatif_view.live_what_if`).
        """
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        """Title, table, the lines under it, the findings."""
        with Vertical(id="whatif"):
            yield Static("What-if: other draft lengths, from the recent probes", id="whatif-title")
            yield DataTable(id="whatif-table", zebra_stripes=True, cursor_type="row")
            yield Static(id="whatif-notes")
            yield Static("Esc: close", id="whatif-status")

    def on_mount(self) -> None:
        """Fill the table and the notes."""
        view, lines = self.view, []
        result = view.answer.result
        if view.info is not None and result is not None:
            table = self.query_one(DataTable)
            table.add_columns(*HEADERS)
            for p in result.predictions:
                table.add_row(*(Text(c) for c in row(view.info, p, result.best.draft_tokens)))
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
        self.query_one("#whatif-notes", Static).update(escape("\n".join(lines)))
