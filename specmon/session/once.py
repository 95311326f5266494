"""`specmon --once --json`: one dashboard frame, for every server watched, then exit.

Each server is watched as the dashboard and the fleet watch it (`ServerSession`: its feed,
`LiveState` and baseline decisions, the store's baseline looked up at its first info), until the
frame has its
figures: the server's first sample with its info (and with it the store's baseline lookup),
then one probe, taken at once rather than at the probe loop's next turn, and the first sample of
the baseline's server when it is another one (until then the baseline is "unverified").
Whatever is not there by the deadline is missing from the frame, as it would be on the dashboard
at that moment.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specmon.model import Sample
from specmon.session.fleet import Fleet
from specmon.session.fleet_row import fleet_row, server_label, worst_first
from specmon.session.server_session import ServerSession
from specmon.session.view_json import FRAME_SCHEMA, view_to_dict

WAITS_FOR = (
    "the server's first sample (and the store's baseline lookup), one probe, and a "
    "sample of the baseline's server when it is another"
)
"""What the frame waits for, in the help and in the timeout's message."""


class FrameSession(ServerSession):
    """A fleet's session that says when its server's info first came (`known`); built by
    `of_target` with `probing=False` (the frame probes once, at once)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known = asyncio.Event()
        """Set at the first sample with the server's info: its baseline was looked up then."""
        self.baseline_read = asyncio.Event()
        """Set at the baseline server's first sample: whether it restarted is known then."""

    def sample(self, sample: Sample) -> None:
        """As the fleet's; then the frame may go on to the probe."""
        super().sample(sample)
        if self.live.server.info is not None:
            self.known.set()

    def baseline_sample(self, sample: Sample) -> None:
        """As the fleet's; then the baseline's lifetime is verified (or found stale)."""
        super().baseline_sample(sample)
        self.baseline_read.set()


@dataclass(frozen=True, slots=True)
class Frame:
    """What `--once` prints: every server's View at one moment, in the fleet table's order."""

    wall: float
    servers: tuple[tuple[str, bool, dict[str, Any]], ...]
    """(label, whether it was ready by the deadline, its View as plain data)."""

    @property
    def complete(self) -> bool:
        """Every server had its figures by the deadline."""
        return all(ready for _, ready, _ in self.servers)

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON document (docs/usage.md, "One frame as JSON")."""
        return {
            "schema": FRAME_SCHEMA,
            "wall": self.wall,
            "complete": self.complete,
            "servers": [
                {"label": label, "ready": ready, "view": view}
                for label, ready, view in self.servers
            ],
        }


async def first_frame(sessions: Sequence[FrameSession], wait_s: float) -> Frame:
    """Watch every server until its frame has figures, or `wait_s` seconds have passed.

    Args:
        sessions: One per server, not yet running.
        wait_s: Seconds to wait for all of them together.

    Returns:
        The frame: every server's View the moment the last was ready (or the deadline came).
    """
    fleet = Fleet(sessions)
    watching = asyncio.create_task(fleet.run())
    waits = {session.url: asyncio.create_task(_ready(session)) for session in sessions}
    try:
        if waits:
            await asyncio.wait(waits.values(), timeout=wait_s)
        ready = {url: task.done() and task.exception() is None for url, task in waits.items()}
        views = [(session, session.view()) for session in sessions]
    finally:
        for task in (*waits.values(), watching):
            task.cancel()
        for task in (*waits.values(), watching):
            with contextlib.suppress(asyncio.CancelledError):
                await task
    wall = sessions[0].wall() if sessions else 0.0
    rows = worst_first(fleet_row(server_label(s.target), view) for s, view in views)
    by_url = {session.url: view for session, view in views}
    return Frame(
        wall, tuple((row.label, ready[row.url], view_to_dict(by_url[row.url])) for row in rows)
    )


async def _ready(session: FrameSession) -> None:
    """The server's info came; then one probe (unless probing is off), failed or not; then the
    baseline's server was read, when the baseline found is of another server."""
    await session.known.wait()
    if session.config.probe:
        await session.probe_now(session.config.connect_timeout)
    if session.live.baseline.followed is not None:
        await session.baseline_read.wait()
