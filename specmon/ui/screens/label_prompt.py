"""Ask for the label of a snapshot (`s`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class LabelPrompt(ModalScreen[str | None]):
    """dismiss(label) to take the snapshot ("" for none), dismiss(None) to cancel."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def compose(self) -> ComposeResult:
        """A one-line input."""
        with Vertical(id="dialog"):
            yield Static("Snapshot this configuration: a label (Enter to start, Esc to cancel)")
            yield Input(placeholder="e.g. eagle3 steps=3 topk=4", id="label")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter starts the snapshot."""
        self.dismiss(event.value.strip())
