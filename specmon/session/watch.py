"""The wiring of a watched target: its connection, its sampler (server info, /metrics, GPU and
host telemetry) and its probe loop. A feed runs these and hands what they emit to the server's
session (`ServerSession`); nothing here knows about Textual.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from specmon.analysis.figures import run_figures
from specmon.errors import SourceError, SpecmonError
from specmon.model import ProbeResult, RunFigures, Sample, SourceName
from specmon.probe_prompts import DEFAULT_CATEGORY, DEFAULT_SET, ProbePrompt, Rotation
from specmon.sources.backends import Connection
from specmon.sources.sampler import PollSource, Sampler, next_deadline
from specmon.sources.telemetry import open_telemetry
from specmon.sources.workers import open_connection
from specmon.target import Target

INFO_EVERY_S = 5.0  # server info is large (31 KB on 0.5.17) and changes only across restarts
BASELINE_SERVER_EVERY_S = 2.0  # the baseline server is watched for restarts only


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """One live probe that finished: when (wall and monotonic) and what it measured."""

    wall: float
    t: float
    figures: RunFigures
    result: ProbeResult
    category: str = DEFAULT_CATEGORY
    """The category of the prompt it sent (`specmon.probe_prompts`)."""


class Watch:
    """One watched server: sample it and probe it, each until cancelled.

    `sample` must be running for `probe` to have a connection; both report through callbacks
    (a feed's, which reports to the server's session).
    """

    def __init__(
        self,
        target: Target,
        *,
        interval: float,
        gpu_metrics: str | None = None,
        telemetry: bool = True,
        prompts: Sequence[ProbePrompt] = DEFAULT_SET,
        wall: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Args:
        target: The server.
        interval: Seconds between samples (and /metrics scrapes).
        gpu_metrics: A DCGM-style endpoint for its GPUs (`--gpu-metrics`).
        telemetry: Read GPUs and host too; off for a baseline server, watched for restarts
            only: then its process alone (here, or from an agent there) every few seconds.
        prompts: What the probe sends, one category per probe in turn (`Rotation`).
        wall: Wall clock.
        clock: Monotonic clock of the probe cadence (tests fake it, with `sleep`).
        sleep: How the probe loop waits for its next deadline.
        """
        self.target = target
        self.interval = interval
        self.gpu_metrics = gpu_metrics
        self.telemetry = telemetry
        self.rotation = Rotation(prompts)
        self.wall = wall
        self.clock = clock
        self.sleep = sleep
        self.connection: Connection | None = None
        self.connected = asyncio.Event()
        """Set while `sample` holds a connection (`probe_once` needs one)."""

    async def sample(
        self, emit: Callable[[Sample], object], on_error: Callable[[str], object]
    ) -> None:
        """Poll the server's sources and emit a Sample per tick, until cancelled.

        Args:
            emit: Receives every Sample.
            on_error: Receives a one-line reason when telemetry cannot be set up at all.
        """
        async with open_connection(self.target) as connection:
            self.connection = connection
            self.connected.set()
            sources = [
                PollSource(SourceName.INFO, connection.info, max(INFO_EVERY_S, self.interval)),
                PollSource(SourceName.METRICS, connection.metrics, self.interval),
            ]
            telemetry = None
            try:
                telemetry = await open_telemetry(
                    self.target.url, gpu_metrics=self.gpu_metrics, gpus=self.telemetry
                )
            except SpecmonError as exc:
                on_error(f"GPU telemetry: {exc}")
            if telemetry is not None:
                every = self.interval if self.telemetry else max(INFO_EVERY_S, self.interval)
                sources.append(PollSource(SourceName.GPU, telemetry.read, every))
            try:
                await Sampler(sources, interval=self.interval).run(emit)
            finally:
                self.connection = None
                self.connected.clear()
                if telemetry is not None:
                    await telemetry.aclose()

    async def probe_once(self, tokens: int) -> ProbeOutcome:
        """One probe now, of the next category in turn, of `tokens` unless its prompt names
        its own length (the exporter's `/probe?target=…` runs one per scrape).

        Raises:
            SourceError: The server is not connected yet (`sample` is not running or has not
                connected), or the probe failed (typed).
        """
        connection = self.connection
        if connection is None:
            raise SourceError(f"{self.target.url}: not connected yet")
        prompt = self.rotation.next()
        result = await connection.probe(
            prompt=prompt.prompt,
            max_tokens=prompt.max_tokens or tokens,
            temperature=prompt.temperature,
        )
        return ProbeOutcome(self.wall(), self.clock(), run_figures(result), result, prompt.category)

    async def probe(
        self,
        *,
        tokens: int,
        every: float,
        paused: Callable[[], bool],
        done: Callable[[ProbeOutcome], object],
        failed: Callable[[float, str], object],
    ) -> None:
        """Probe every `every` seconds while `paused()` is false, until cancelled.

        Probes start on a drift-free cadence (a probe's own duration does not stretch it; one
        longer than `every` makes the missed starts skipped, not queued), so the rate at the
        server is the one asked for.

        Args:
            tokens: Tokens per probe.
            every: Seconds between probe starts.
            paused: Checked before each probe (the user's `p`, or a bench on this server).
            done: Receives each finished probe.
            failed: Receives (wall time, one-line reason) of each failed one.
        """
        next_at = self.clock()
        while True:
            if self.connection is not None and not paused():
                try:
                    outcome = await self.probe_once(tokens)
                except SpecmonError as exc:
                    failed(self.wall(), str(exc))
                else:
                    done(outcome)
            next_at = next_deadline(next_at, every, self.clock())
            await self.sleep(max(0.0, next_at - self.clock()))
