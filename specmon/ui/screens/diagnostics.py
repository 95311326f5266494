"""`i`: each source's age and last error, and why each "—" on the dashboard is missing."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
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
        """Two short sections."""
        lines = ["[bold]Sources[/] (age of the last good reading · last error)"]
        for source in self.view.sources:
            if source.error:
                state = f"[$bad]{escape(source.error)}[/]"
            elif source.unavailable:  # it answered, but with nothing to show: not "ok"
                state = f"[$stale]unavailable: {escape(source.unavailable)}[/]"
            else:
                state = "ok"
            lines.append(f"  {source.name:<8} {age(source.age_s):>5} · {state}")
        lines.append("")
        lines.append("[bold]Why values show —[/]")
        if not self.view.missing:
            lines.append("  nothing is missing")
        lines.extend(f"  {escape(what)}: {escape(why)}" for what, why in self.view.missing)
        lines.append("\n[dim]Esc closes[/]")
        with VerticalScroll(id="dialog"):
            yield Static("\n".join(lines))
