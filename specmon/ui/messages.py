"""Messages to the app: small dataclasses; per-tick ones replace each other."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from specmon.session.fleet_row import FleetRow
from specmon.session.history_zoom import Zoomed
from specmon.session.view import Level, View


@dataclass
class ViewReady(Message):
    """A server's session took an input: its View now (`ServerSession.on_view`)."""

    view: View

    def can_replace(self, message: Message) -> bool:
        """A newer View makes an undelivered older one pointless."""
        return isinstance(message, ViewReady)


@dataclass
class SessionFailed(Message):
    """The session raised what no code of it handles: a bug, the dashboard's crash."""

    error: Exception


@dataclass
class HistoryNote(Message):
    """A read of the lasting history off the event loop (`z`) said a line: a store error."""

    wall: float
    level: Level
    text: str


@dataclass
class ZoomRead(Message):
    """A span of the history was read for the sparklines (`z`)."""

    zoomed: Zoomed


@dataclass
class FleetRowsReady(Message):
    """Every server's row of the fleet table, worst first."""

    rows: tuple[FleetRow, ...]

    def can_replace(self, message: Message) -> bool:
        """Newer rows make undelivered older ones pointless."""
        return isinstance(message, FleetRowsReady)
