"""`/`: ask for the text a list is filtered by (the events log, the fleet table)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class FilterPrompt(ModalScreen[str | None]):
    """dismiss(text) to filter by it ("" shows everything again), dismiss(None) to cancel."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, what: str, current: str) -> None:
        """Args:
        what: What is kept ("the events containing", "the servers whose name or address
            holds").
        current: The filter now: the input starts with it.
        """
        super().__init__()
        self.what = what
        self.current = current

    def compose(self) -> ComposeResult:
        """A one-line input."""
        with Vertical(id="dialog"):
            yield Static(f"Show only {self.what} (Enter; empty: all; Esc: keep as it was)")
            yield Input(value=self.current, placeholder="text, any case", id="filter")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter filters."""
        self.dismiss(event.value.strip())
