"""Work a screen queues for after the next refresh, skipped once the screen has closed.

A key pressed right after another (`w` then Esc, as the soak does) can close a screen before the
refresh its `on_resize` or `on_mount` queued work after: that work would look for widgets the
closing screen has already removed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen


def after_refresh(screen: Screen[Any], callback: Callable[[], object]) -> None:
    """Run `callback` after the next refresh while `screen` is still open (on the app's stack)."""

    def run() -> None:
        if screen.is_attached and screen in screen.app.screen_stack:
            callback()

    screen.call_after_refresh(run)
