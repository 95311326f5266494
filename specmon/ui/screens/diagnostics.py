"""`i`: each source's age and last error, and why each "—" on the dashboard is missing."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from specmon.session.view import View
from specmon.ui.format import age, escape


class DiagnosticsScreen(ModalScreen[None]):
    """Sources and missing values, explained."""

    BINDINGS = [Binding("escape,i,q", "dismiss", "Close")]

    def __init__(self, view: View) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        """Two short sections, each a column of names beside what is said of them (a long
        reason wraps in its own column)."""
        sources = []
        for source in self.view.sources:
            if source.error:
                state = f"[$bad]{escape(source.error)}[/]"
            elif source.unavailable:  # it answered, but with nothing to show: not "ok"
                state = f"[$stale]unavailable: {escape(source.unavailable)}[/]"
            else:
                state = "ok"
            sources.append((f"{source.name:<8} {age(source.age_s):>5} ·", state))
        missing = [(f"{escape(what)}:", escape(why)) for what, why in self.view.missing]
        with VerticalScroll(id="dialog"):
            yield Static("[bold]Sources[/] (age of the last good reading · last error)")
            yield from _pairs(sources)
            yield Static("\n[bold]Why values show —[/]")
            yield from _pairs(missing) if missing else [Static("  nothing is missing")]
            yield Static("\n[dim]Esc closes[/]")


def _pairs(rows: list[tuple[str, str]]) -> list[Grid]:
    if not rows:
        return []
    return [Grid(*(Static(cell) for row in rows for cell in row), classes="pairs")]
