"""The events log: restarts, baselines, config changes, source errors — newest last."""

from __future__ import annotations

import time

from textual.reactive import var
from textual.widgets import Static

from specmon.session.view import Event
from specmon.ui.format import escape
from specmon.ui.widgets import quiet

_STYLE = {"info": "", "warn": "$stale", "error": "$bad"}


class EventsLog(Static):
    """The last events that fit, newest at the bottom."""

    events: var[tuple[Event, ...]] = var(())  # the watcher redraws what changed

    def on_mount(self) -> None:
        """Title the panel."""
        self.border_title = "Events"

    def watch_events(self, events: tuple[Event, ...]) -> None:
        """Render as many of the newest events as the panel has lines."""
        lines = max(1, self.content_size.height or 3)
        rendered = []
        for event in events[-lines:]:
            when = time.strftime("%H:%M:%S", time.localtime(event.wall))
            style = _STYLE[event.level]
            text = escape(event.text)
            rendered.append(f"[dim]{when}[/] " + (f"[{style}]{text}[/]" if style else text))
        quiet.show(self, "\n".join(rendered) or "[dim]no events yet[/]")

    def on_resize(self) -> None:
        """As many events as the new height holds."""
        self.watch_events(self.events)
