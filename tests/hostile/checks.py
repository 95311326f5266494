"""What every hostile test asks of what specmon shows and writes, whatever the server sent:
no control character reaches a screen, every number is finite (null or "—" for unknown), every
message is one line. Shared by the surfaces' tests (`server.py` is the server they face)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Static

CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))) - {"\n"}
"""What must never reach the terminal from a server: C0 and C1 controls (an escape starts
each sequence), DEL; newlines are the widgets' own."""


def controls(text: str) -> list[str]:
    """The control characters of `text` (the first few), for an assertion's message."""
    return [c for c in text if c in CONTROL][:5]


def finite(value: Any, where: str = "") -> None:
    """Every number in parsed JSON is finite (null stands for unknown)."""
    stack = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, f"{at}.{k}") for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(item))
        elif isinstance(item, float):
            assert math.isfinite(item), f"{at} = {item}"


def shown(app: App[Any]) -> str:
    """Every text the screen shows: its Statics' content and every widget's border titles."""
    texts = [str(w.render()) for w in app.screen.query(Static)]
    texts += [str(w.border_title or "") + str(w.border_subtitle or "") for w in app.screen.query()]
    return "\n".join(texts)


async def until(pilot: Pilot[Any], condition: Callable[[], bool], limit_s: float = 30.0) -> None:
    """Let the app run until `condition` holds (fails after `limit_s`)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await pilot.pause(0.05)
