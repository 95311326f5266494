"""`l`: the events log in full — every event the session keeps (the filter's, when `/` set one),
each wrapped whole, newest at the bottom, scrollable. The dashboard's panel shows only the newest
few, each on one line ending in "…" where it is cut (a dump's path, a long reason)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from specmon.session.view import Event
from specmon.ui.widgets.events_log import event_lines


class EventsScreen(ModalScreen[None]):
    """Every event kept, wrapped whole; opens at the newest."""

    BINDINGS = [Binding("escape,l,q", "dismiss", "Close")]

    def __init__(self, events: Sequence[Event], needle: str = "") -> None:
        """Args:
        events: The events kept, oldest first.
        needle: The events log's filter (`/`): only the events holding it ("": all).
        """
        super().__init__()
        self.events = tuple(events)
        self.needle = needle

    def compose(self) -> ComposeResult:
        """The events, wrapped, in a scrollable page."""
        with VerticalScroll(id="events-page") as page:
            lines = event_lines(self.events, self.needle)
            kept = f" holding {self.needle!r}" if self.needle else ""
            page.border_title = f"Events{kept}: {len(lines)}"
            page.border_subtitle = "↑↓ PgUp PgDn: scroll · Esc: close"  # in view at any height
            yield Static("\n".join(lines) or "[dim]no events[/]", id="events-all")

    def on_mount(self) -> None:
        """Open at the newest event, as the panel shows it."""
        self.query_one("#events-page", VerticalScroll).scroll_end(animate=False)  # once laid out
