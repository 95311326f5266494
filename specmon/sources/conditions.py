"""The conditions around a probe: the server's load beside it, and whether specmon's own machine
kept up with its stream (`RunConditions`, docs/metrics.md "Conditions").

While any probe of one connection streams, `ConditionsWatch` reads the server's `/metrics` every
`SCRAPE_EVERY_S` (its running and queued gauges) and ticks a timer every `TICK_S` (how late the
event loop woke: a chunk that arrives meanwhile is read that late). Each probe keeps the readings
that fell inside it: the running gauge counts the probe itself and specmon's other streams in
flight (a bench at concurrency N), so those are subtracted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from specmon.errors import SpecmonError
from specmon.model import ProbeResult, RunConditions, ServerMetrics
from specmon.sources.host import CpuTimes, cpu_shares, cpu_times

TICK_S: float | None = 0.02
"""The event-loop timer's period while a probe streams; None: the lag is not measured (the test
suite sets that: a timing measurement on a shared machine is not what its tests assert)."""
HOST_CPU = True
"""Whether the machine's CPU busy share is read over each probe; False: unknown (the test suite
sets that: how busy a shared machine is at the moment is not what its tests assert)."""
MIN_TICKS = 5
"""Fewer ticks inside a run say nothing about how late its chunks were read."""
FIRST_SCRAPE_S = 0.2
"""The first load reading waits this long after the probe is sent: before its first token the
probe is not yet among the server's running requests."""
SCRAPE_EVERY_S = 0.5
"""Seconds between two load readings while a probe streams."""
_KEEP = 4096
"""Readings and ticks kept (a busy period's worth: 80 s of ticks)."""


class _Default:
    """The marker of an argument left to the module's setting."""


def _unread() -> None:
    """No CPU times (`HOST_CPU` off)."""


@dataclass(frozen=True, slots=True)
class _LoadReading:
    start: float
    end: float
    own: int
    """specmon's streams in flight on this connection when the reading began."""
    running: float | None
    queued: float | None


class ConditionsWatch:
    """Watches the conditions of one connection's probes (`around` each one)."""

    def __init__(
        self,
        scrape: Callable[[], Awaitable[ServerMetrics]],
        *,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        cpu: Callable[[], CpuTimes | None] | type[_Default] = _Default,
        tick_s: float | type[_Default] | None = _Default,
        first_scrape_s: float = FIRST_SCRAPE_S,
        scrape_every_s: float = SCRAPE_EVERY_S,
    ) -> None:
        """Args:
        scrape: One `/metrics` reading of the server (the connection's `metrics`).
        clock: Monotonic clock (the probe's chunk times are on `time.perf_counter`).
        sleep: Awaits a delay.
        cpu: This machine's CPU times; read unless the module's `HOST_CPU` is off, unless given.
        tick_s: The lag timer's period; the module's `TICK_S` unless given (None: off).
        first_scrape_s: Delay of the first load reading after the first probe is sent.
        scrape_every_s: Seconds between load readings.
        """
        self.scrape = scrape
        self.clock = clock
        self.sleep = sleep
        self.cpu: Callable[[], CpuTimes | None] = (
            (cpu_times if HOST_CPU else _unread) if isinstance(cpu, type) else cpu
        )
        self.tick_s: float | None = TICK_S if isinstance(tick_s, type) else tick_s
        self.first_scrape_s = first_scrape_s
        self.scrape_every_s = scrape_every_s
        self.in_flight = 0
        self._readings: deque[_LoadReading] = deque(maxlen=_KEEP)
        self._ticks: deque[tuple[float, float]] = deque(maxlen=_KEEP)
        self._tasks: list[asyncio.Task[None]] = []

    async def around(self, probe: Awaitable[ProbeResult]) -> ProbeResult:
        """Await `probe` and return its result with the conditions it ran under."""
        start = self.clock()
        cpu_before = self.cpu()
        self._enter()
        try:
            result = await probe
        finally:
            end = self.clock()
            await self._leave()
        busy, steal = cpu_shares(cpu_before, self.cpu())
        chunks = result.chunks
        load = self._load(start + chunks[0].t, start + chunks[-1].t) if chunks else (None, None, 0)
        lag, lag_max = self._lag(start, end)
        conditions = RunConditions(
            others_running=load[0],
            queued=load[1],
            load_readings=load[2],
            read_lag_ms=lag,
            read_lag_max_ms=lag_max,
            host_cpu_pct=busy,
            host_steal_pct=steal,
        )
        return dataclasses.replace(result, conditions=conditions)

    def _enter(self) -> None:
        self.in_flight += 1
        if self.in_flight > 1:
            return
        self._tasks = [asyncio.ensure_future(self._read_load())]
        if self.tick_s is not None:
            self._tasks.append(asyncio.ensure_future(self._tick(self.tick_s)))

    async def _leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight:
            return
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _read_load(self) -> None:
        await self.sleep(self.first_scrape_s)
        while True:
            began, own = self.clock(), self.in_flight
            try:
                metrics = await self.scrape()
            except SpecmonError:
                return  # metrics off or failing: the load stays unknown
            self._readings.append(
                _LoadReading(
                    began, self.clock(), own, metrics.num_running_reqs, metrics.num_queue_reqs
                )
            )
            await self.sleep(self.scrape_every_s)

    async def _tick(self, period: float) -> None:
        while True:
            due = self.clock() + period
            await self.sleep(period)
            now = self.clock()
            self._ticks.append((now, max(0.0, now - due)))

    def _load(self, first: float, last: float) -> tuple[int | None, int | None, int]:
        """(others running, queued, readings) over the readings taken wholly between the
        probe's first and last chunk: only then was the probe itself among the running."""
        inside = [r for r in self._readings if r.start >= first and r.end <= last]
        running = [max(0, round(r.running) - r.own) for r in inside if r.running is not None]
        queued = [round(r.queued) for r in inside if r.queued is not None]
        return (max(running) if running else None, max(queued) if queued else None, len(inside))

    def _lag(self, start: float, end: float) -> tuple[float | None, float | None]:
        lags = [lag for t, lag in self._ticks if start <= t <= end]
        if len(lags) < MIN_TICKS:
            return None, None
        return 1000 * statistics.median(lags), 1000 * max(lags)
