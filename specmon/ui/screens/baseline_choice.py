"""The choices when speculation is on and no baseline server was given (docs/design.md §5)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from specmon.ui.format import escape


class BaselineChoice(ModalScreen[bool]):
    """Explain how to get a baseline; dismiss(True) means "wait for the restart"."""

    BINDINGS = [Binding("escape", "dismiss(False)", "Cancel"), Binding("w", "wait", "Wait")]

    def __init__(self, url: str, speculative_flags: str, baseline_server_hint: str) -> None:
        """Args:
        url: The speculative server.
        speculative_flags: Its speculative launch flags, as its backend names them.
        baseline_server_hint: How to give specmon a baseline server (markup): a flag for one
            server, the config file's `[[targets]]` in a fleet.
        """
        super().__init__()
        self.url = url
        self.speculative_flags = speculative_flags
        self.baseline_server_hint = baseline_server_hint

    def compose(self) -> ComposeResult:
        """The explanation and two buttons."""
        with VerticalScroll(id="dialog") as dialog:
            # On the border: the buttons are under a short terminal's last line (60x15).
            dialog.border_subtitle = "w: wait for the restart · Esc: cancel"
            yield Static(
                f"[bold]{self.url} runs with speculation[/], so it cannot be its own baseline.\n\n"
                "Either:\n"
                f"  1. {self.baseline_server_hint} of a server with the same model and flags but "
                "no speculation; or\n"
                "  2. [bold]wait[/]: restart this server with the same flags minus "
                f"{escape(self.speculative_flags)}. specmon keeps watching, takes the baseline as "
                "soon as it answers without speculation, then tells you to restart it with "
                "speculation.",
                id="dialog-text",
            )
            with Horizontal(id="dialog-buttons"):
                yield Button("Wait for the restart (w)", id="wait", variant="primary")
                yield Button("Cancel (Esc)", id="cancel")

    def action_wait(self) -> None:
        """w: wait for the non-speculative restart."""
        self.dismiss(True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Either button closes the dialog."""
        self.dismiss(event.button.id == "wait")
