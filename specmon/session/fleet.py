"""Many servers watched at once: a `Fleet` of sessions, one per server.

Each is the one session type (`ServerSession.of_target`): the same `LocalFeed` (sampler, probe
loop, baseline server, benches) feeding the same `LiveState`, the same baseline decisions,
the same View. The fleet runs them together and keeps one baseline bench per baseline server at
a time (`benching`). The exporter serves these sessions; `fleet_row` turns each View into one
row of the fleet table.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from specmon.session.server_session import ServerSession


class Fleet:
    """Every target's session; run them together."""

    def __init__(self, sessions: Sequence[ServerSession]) -> None:
        self.sessions = list(sessions)
        self._group: asyncio.TaskGroup | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._benching: set[str] = set()
        for session in self.sessions:
            session.benching = self._benching

    def get(self, url: str) -> ServerSession | None:
        """The session of a target, by URL."""
        return next((s for s in self.sessions if s.url == url), None)

    async def run(self) -> None:
        """Run every session until cancelled; a session added later is started by `add`."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for session in self.sessions:
                    self._start(session)
                await asyncio.Event().wait()  # until cancelled: the sessions with it
        finally:
            self._group = None
            self._tasks.clear()

    def _start(self, session: ServerSession) -> None:
        if self._group is not None:
            task = self._group.create_task(session.run(), name=f"target-{session.url}")
            self._tasks[session.url] = task

    def add(self, session: ServerSession) -> None:
        """Watch one more target (the exporter's `/probe?target=…` of a new one)."""
        session.benching = self._benching
        self.sessions.append(session)
        self._start(session)

    def remove(self, url: str) -> None:
        """Stop watching a target (one the exporter added, no longer scraped)."""
        self.sessions = [s for s in self.sessions if s.url != url]
        task = self._tasks.pop(url, None)
        if task is not None:
            task.cancel()  # a TaskGroup lets one of its tasks be cancelled alone
