"""The sampler: every source polled on its own drift-free cadence, one immutable Sample per tick.

Each source runs in its own task, so a hung source only ages its own reading: the others and
the tick go on. A Sample holds the latest reading of every source with when it was taken and
the last error, so the UI can show each source's age and why a value is missing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from specmon.errors import SpecmonError
from specmon.model import Reading, Sample


@dataclass(frozen=True, slots=True)
class PollSource:
    """A named fetch and how often to run it."""

    name: str
    fetch: Callable[[], Awaitable[Any]]
    every: float


class Sampler:
    """Polls sources concurrently and emits a Sample every `interval` seconds."""

    def __init__(
        self,
        sources: list[PollSource],
        *,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.sources = sources
        self.interval = interval
        self.clock = clock
        self.wall = wall
        self._readings: dict[str, Reading] = {s.name: Reading(None, None, 0) for s in sources}

    def sample(self) -> Sample:
        """The current state of every source."""
        return Sample(self.clock(), self.wall(), MappingProxyType(dict(self._readings)))

    async def poll_once(self, source: PollSource) -> None:
        """Run one fetch of a source and record its value or its error."""
        try:
            value = await source.fetch()
        except SpecmonError as exc:
            self._fail(source.name, str(exc))
        except Exception as exc:  # a bug in one source must not stop the others
            self._fail(source.name, f"internal error in {source.name}: {exc!r}")
        else:
            seq = self._readings[source.name].seq + 1
            self._readings[source.name] = Reading(value, self.clock(), seq)

    def _fail(self, name: str, message: str) -> None:
        previous = self._readings[name]
        self._readings[name] = Reading(
            previous.value, previous.at, previous.seq, message, self.clock()
        )

    async def _poll(self, source: PollSource) -> None:
        next_at = self.clock()
        while True:
            await self.poll_once(source)
            next_at = next_deadline(next_at, source.every, self.clock())
            await asyncio.sleep(max(0.0, next_at - self.clock()))

    async def run(self, emit: Callable[[Sample], object]) -> None:
        """Poll every source and emit a Sample per tick, until cancelled."""
        async with asyncio.TaskGroup() as group:
            for source in self.sources:
                group.create_task(self._poll(source), name=f"poll-{source.name}")
            next_at = self.clock()
            while True:
                next_at = next_deadline(next_at, self.interval, self.clock())
                await asyncio.sleep(max(0.0, next_at - self.clock()))
                emit(self.sample())


def next_deadline(previous: float, every: float, now: float) -> float:
    """The next multiple of `every` after `previous` that is still ahead (missed ones skipped)."""
    deadline = previous + every
    if deadline <= now:
        deadline += every * ((now - deadline) // every + 1)
    return deadline
