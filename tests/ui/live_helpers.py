"""Waiting on a dashboard that runs real workers: for a condition, bounded, never a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot


async def until(pilot: Pilot[None], condition: Callable[[], bool], limit_s: float = 30.0) -> None:
    """Let the app run until `condition` holds (fails after `limit_s`)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await pilot.pause(0.05)
