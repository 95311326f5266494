"""The events log: restarts, baselines, config changes, source errors — newest last; `/` keeps
those holding a text (`filter`)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from textual.reactive import var
from textual.widgets import Static

from specmon.session.view import Event
from specmon.ui.format import escape
from specmon.ui.widgets import quiet

_STYLE = {"info": "", "warn": "$stale", "error": "$bad"}


def event_lines(events: Sequence[Event], needle: str = "") -> list[str]:
    """The events holding `needle` (case aside; "": all) as markup lines: time, then the text
    in its level's colour (the panel and `e`'s page write them alike)."""
    folded = needle.casefold()
    rendered = []
    for event in events:
        if folded and folded not in event.text.casefold():
            continue
        when = time.strftime("%H:%M:%S", time.localtime(event.wall))
        style = _STYLE[event.level]
        text = escape(event.text)
        rendered.append(f"[dim]{when}[/] " + (f"[{style}]{text}[/]" if style else text))
    return rendered


class EventsLog(Static):
    """The last events that fit, newest at the bottom."""

    events: var[tuple[Event, ...]] = var(())  # the watcher redraws what changed
    filter: var[str] = var("")
    """Only the events holding it, case aside ("": all)."""

    def on_mount(self) -> None:
        """Title the panel; say where the rest is (each line is cut to the panel's width)."""
        self.border_title = "Events"
        self.border_subtitle = "l: all"

    def watch_filter(self, text: str) -> None:
        """Say the filter in the title; show what it keeps."""
        self.border_title = f"Events holding {text!r}" if text else "Events"
        self.watch_events(self.events)

    def watch_events(self, events: tuple[Event, ...]) -> None:
        """Render as many of the newest events (those the filter keeps) as the panel has lines."""
        lines = max(1, self.content_size.height or 3)
        rendered = event_lines(events, self.filter)[-lines:]
        empty = "[dim]none holds that (/ changes it)[/]" if self.filter else "[dim]no events yet[/]"
        quiet.show(self, "\n".join(rendered) or empty)

    def on_resize(self) -> None:
        """As many events as the new height holds."""
        self.watch_events(self.events)
