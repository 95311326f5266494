"""The events log: restarts, baselines, config changes, source errors — newest last; `/` keeps
those holding a text (`filter`)."""

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
    filter: var[str] = var("")
    """Only the events holding it, case aside ("": all)."""

    def on_mount(self) -> None:
        """Title the panel."""
        self.border_title = "Events"

    def watch_filter(self, text: str) -> None:
        """Say the filter in the title; show what it keeps."""
        self.border_title = f"Events holding {text!r}" if text else "Events"
        self.watch_events(self.events)

    def watch_events(self, events: tuple[Event, ...]) -> None:
        """Render as many of the newest events (those the filter keeps) as the panel has lines."""
        lines = max(1, self.content_size.height or 3)
        needle = self.filter.casefold()
        if needle:
            events = tuple(event for event in events if needle in event.text.casefold())
        rendered = []
        for event in events[-lines:]:
            when = time.strftime("%H:%M:%S", time.localtime(event.wall))
            style = _STYLE[event.level]
            text = escape(event.text)
            rendered.append(f"[dim]{when}[/] " + (f"[{style}]{text}[/]" if style else text))
        empty = "[dim]no events yet[/]" if not needle else "[dim]none holds that (/ changes it)[/]"
        quiet.show(self, "\n".join(rendered) or empty)

    def on_resize(self) -> None:
        """As many events as the new height holds."""
        self.watch_events(self.events)
