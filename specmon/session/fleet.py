"""Many servers watched at once: a `Fleet` of sessions, one per server.

Each is the one session type (`ServerSession.of_target`): the same `LocalFeed` (sampler, probe
loop, baseline server, benches) feeding the same `LiveState`, the same baseline decisions,
the same View. The fleet runs them together and keeps one baseline bench per baseline server at
a time (`benching`). The exporter serves these sessions; `fleet_row` turns each View into one
row of the fleet table.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence

from specmon.safe_text import safe_text
from specmon.session.server_session import ServerSession

RETRY_FIRST_S = 1.0
"""How long a session stopped by an error waits before it starts again; doubled at each failure
that follows within `RETRY_MAX_S` of the start before it, up to that."""
RETRY_MAX_S = 60.0


class Fleet:
    """Every target's session; run them together, each on its own.

    A session stopped by an error (a server answering what no reader foresaw, a bug) is restarted
    alone, with its state dropped (`ServerSession.rewind`: its View says "connecting", so the
    exporter serves it down) and the error said in its events log, after a back-off; the
    other targets, the exporter and the fleet dashboard never see it.
    """

    def __init__(
        self,
        sessions: Sequence[ServerSession],
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Args:
        sessions: One per target.
        clock: Monotonic clock of the back-off.
        sleep: How a failed session waits before its restart (tests fake it).
        """
        self.sessions = list(sessions)
        self.clock = clock
        self.sleep = sleep
        self.failures: dict[str, int] = {}
        """Each target's sessions stopped by an error so far, by URL."""
        self._running = False
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._benching: set[str] = set()
        for session in self.sessions:
            session.benching = self._benching

    def get(self, url: str) -> ServerSession | None:
        """The session of a target, by URL."""
        return next((s for s in self.sessions if s.url == url), None)

    async def run(self) -> None:
        """Run every session until cancelled; a session added later is started by `add`."""
        self._running = True
        try:
            for session in self.sessions:
                self._start(session)
            await asyncio.Event().wait()  # until cancelled: the sessions with it
        finally:
            self._running = False
            tasks = list(self._tasks.values())
            self._tasks.clear()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _start(self, session: ServerSession) -> None:
        if self._running:
            task = asyncio.get_running_loop().create_task(
                self._supervise(session), name=f"target-{session.url}"
            )
            self._tasks[session.url] = task

    async def _supervise(self, session: ServerSession) -> None:
        """Run one session, restarting it after each error, until cancelled."""
        delay = RETRY_FIRST_S
        while True:
            started = self.clock()
            try:
                await session.run()
                return
            except Exception as exc:  # one target's error must stop no other
                if self.clock() - started >= RETRY_MAX_S:
                    delay = RETRY_FIRST_S  # it ran a good while: not the same failure looping
                self.failures[session.url] = self.failures.get(session.url, 0) + 1
                # Saying so builds a View, which may meet the same error: then it goes unsaid
                # (the count above and the state "connecting" still tell).
                with contextlib.suppress(Exception):
                    session.rewind()
                    session.log(session.wall(), "error", failure_text(exc, delay))
            await self.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

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
            task.cancel()


def failure_text(exc: BaseException, retry_in: float) -> str:
    """The events log's line for a session stopped by `exc`: one line, what and when next (the
    error itself, not the task group that carried it)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    detail = safe_text(" ".join(str(exc).split()), limit=200)  # it may quote a server's bytes
    what = type(exc).__name__ + (f": {detail}" if detail else "")
    return f"stopped by an internal error ({what}); starting again in {retry_in:g} s"
