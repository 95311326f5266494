"""Memory stays bounded under the hostile server's worst inputs (issue 36 §1): the dashboard's
session (headless: the TUI adds nothing a server controls) polls and probes a server answering a
body past the parse-off-loop limit at every scrape, streams that never end, and server info
200,000 keys wide, for many polls. What it keeps must grow, over each of two spans of polls, no
more than what the same session keeps of a well-behaved server over as many polls.

Structural measures only, read after a full collection: the objects the collector tracks, and
the bytes of the strings they hold (a body is a string, which the collector does not track).
Counted per poll, never per second: a busy machine polls less often, not differently.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hostile.server import CASES, HostileServer, HostileThread

from specmon.config import MonitorConfig, Targets
from specmon.session.server_session import dashboard_session
from specmon.sources import metrics
from specmon.sources.http import OFF_LOOP_CHARS
from specmon.sources.scrape_memo import ScrapeMemo
from specmon.target import Target

pytestmark = pytest.mark.slow  # ~10 s a server: hundreds of polls

WARM_UP = 30
"""Scrapes before the first checkpoint: connections, caches and first-use imports settle."""
POLLS = 80
"""Scrapes between two checkpoints."""
OBJECTS_SLACK = 3_000
BYTES_SLACK = 2 * 2**20
"""What two runs of the same session differ by without a leak (the event loop's and httpx's
own churn), far below one leaked body (`HUGE`) or one leaked wide answer (~200,000 objects)."""
HUGE = 2 * OFF_LOOP_CHARS


def _huge_metrics(server: HostileServer) -> None:
    server.faults.huge["/metrics"] = HUGE


def _endless(server: HostileServer) -> None:
    server.faults.endless_stream = True


WORST: dict[str, Callable[[HostileServer], None]] = {
    "well-behaved": lambda server: None,
    "/metrics past the off-loop limit": _huge_metrics,
    "endless streams": _endless,
    "server info 200,000 keys wide": next(
        c.apply for c in CASES if c.name == "server info 200,000 keys wide"
    ),
}


@dataclass(frozen=True)
class Held:
    objects: int
    """Objects the garbage collector tracks."""
    text: int
    """Bytes of the strings (str, bytes) those objects refer to, each counted once."""


def _held() -> Held:
    gc.collect()
    objects = gc.get_objects()
    seen: set[int] = set()
    text = 0
    for holder in objects:
        for held in gc.get_referents(holder):
            if isinstance(held, str | bytes | bytearray) and id(held) not in seen:
                seen.add(id(held))
                text += sys.getsizeof(held)
    return Held(len(objects), text)


async def _growth(server: HostileThread) -> tuple[Held, Held]:
    """What the dashboard's session holds more at two checkpoints `POLLS` scrapes apart, each
    against the one before it."""
    config = MonitorConfig(
        url=server.url, interval=0.05, probe_every=0.1, probe_tokens=16, read_timeout=1.0
    )  # type: ignore[call-arg]
    target = Target(server.url, connect_timeout=1.0, read_timeout=1.0)
    session = dashboard_session(config, Targets(target, None), None)
    requests = server.server.requests

    async def scrapes(count: int) -> None:
        until = requests["/metrics"] + count
        while requests["/metrics"] < until:  # noqa: ASYNC110 (the server's count: its thread's)
            await asyncio.sleep(0.05)

    task = asyncio.create_task(session.run())
    try:
        await scrapes(WARM_UP)
        first = _held()
        await scrapes(POLLS)
        second = _held()
        await scrapes(POLLS)
        third = _held()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return (
        Held(second.objects - first.objects, second.text - first.text),
        Held(third.objects - second.objects, third.text - second.text),
    )


@pytest.mark.timeout(600)
def test_a_hostile_server_costs_no_more_memory_than_a_good_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The line memo is bounded on its own (16,384 lines, tests/sources); here it would fill
    # with every moving counter's new lines and hide what else grows.
    monkeypatch.setattr(metrics, "_LINES", ScrapeMemo(keep=64))
    grown: dict[str, tuple[Held, Held]] = {}
    for name, apply in WORST.items():
        with HostileThread() as server:
            apply(server.server)  # type: ignore[arg-type]
            grown[name] = asyncio.run(_growth(server))
    good = grown["well-behaved"]
    objects = max(0, *(step.objects for step in good))
    text = max(0, *(step.text for step in good))
    for name, (one, two) in grown.items():
        # A leak grows both steps; a body in flight at one checkpoint (a wide answer is ~4 MB)
        # inflates one step only, and the one after it reads it back as freed.
        assert min(one.objects, two.objects) <= 2 * objects + OBJECTS_SLACK, (name, grown)
        assert min(one.text, two.text) <= 2 * text + BYTES_SLACK, (name, grown)
