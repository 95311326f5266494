"""The bench protocol: warm-up runs, then N timed probe runs (each of them `concurrency`
streams at once), into one Snapshot.

Nothing is saved here: the caller stores the Snapshot only when `run_bench` returns, so an
interrupted bench (Ctrl-C, server gone, server restarted mid-bench) leaves no trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from specmon.analysis.figures import run_figures
from specmon.analysis.gpus import gpu_state as summarize_gpu_state
from specmon.analysis.rates import any_reset
from specmon.analysis.validity import lifetime_of
from specmon.errors import SourceError, SpecmonError
from specmon.model import (
    ProbeResult,
    Protocol,
    RunFigures,
    ServerInfo,
    ServerMetrics,
    Snapshot,
    Telemetry,
)
from specmon.sources.backends import Connection
from specmon.wording import BUFFERED_STREAM

GPU_SAMPLE_EVERY_S = 0.5


class BenchInvalid(SpecmonError):
    """The bench finished but its runs cannot be trusted (the server restarted during it)."""


@dataclass(frozen=True, slots=True)
class Progress:
    """One step of a bench, for whoever shows progress."""

    phase: str
    """"warmup" or "run"."""
    index: int
    """1-based."""
    total: int
    figures: RunFigures


class _GpuSamples:
    """GPU readings taken along a bench (none without a `gpu_state` reader)."""

    def __init__(self, read: Callable[[], Awaitable[Telemetry]] | None, every: float) -> None:
        self.read = read
        self.every = every
        self.readings: list[Telemetry] = []

    async def sample(self) -> None:
        if self.read is None:
            return
        with contextlib.suppress(SourceError):  # context for the bench, never its failure
            self.readings.append(await self.read())

    async def during(self, probe: Awaitable[list[ProbeResult]]) -> list[ProbeResult]:
        """Await a batch of probes while sampling the GPUs every `every` seconds."""
        if self.read is None:
            return await probe
        sampler = asyncio.create_task(self._every())
        try:
            return await probe
        finally:
            sampler.cancel()
            await asyncio.gather(sampler, return_exceptions=True)

    async def _every(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await self.sample()


async def _metrics_or_none(connection: Connection) -> ServerMetrics | None:
    try:
        return await connection.metrics()
    except SourceError:
        return None  # metrics are optional for a bench: off, or a passing failure


async def _together(probe: Callable[[], Awaitable[ProbeResult]], streams: int) -> list[ProbeResult]:
    """`streams` probes in flight at once (the protocol's concurrency), in the order sent.

    The first failure cancels the others and is raised as it is (not as an exception group).
    """
    if streams == 1:
        return [await probe()]
    tasks = [asyncio.ensure_future(probe()) for _ in range(streams)]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _restarted(before: ServerInfo, after: ServerInfo) -> bool:
    # Any arg change means another launch: SGLang draws a fresh `random_seed` at every start
    # unless one is given, and flags can only change across a restart.
    return before.args != after.args


async def run_bench(
    connection: Connection,
    url: str,
    info: ServerInfo,
    protocol: Protocol,
    *,
    label: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    wall: Callable[[], float] = time.time,
    gpu_state: Callable[[], Awaitable[Telemetry]] | None = None,
    gpu_every: float = GPU_SAMPLE_EVERY_S,
    started_at: float | None = None,
) -> Snapshot:
    """Run the protocol against one server and return the completed Snapshot.

    Args:
        connection: The target's connection, its backend known (`info` read).
        url: The target's base URL (recorded in the snapshot).
        info: Server info read just before; read again at the end to detect a restart.
        protocol: Warm-up and run counts, max tokens, prompt; at a concurrency N every
            warm-up and timed run is N streams at once, each stream one of the snapshot's runs.
        label: The user's label for the snapshot.
        on_progress: Called after every warm-up and timed run.
        wall: Wall clock for the snapshot's time.
        gpu_state: Reads the GPUs (a telemetry source's `read`): sampled before the runs, every
            `gpu_every` seconds during each timed run (idle clocks say nothing) and after, into
            the snapshot's `gpu`; the server process's start time it reports goes into the
            snapshot's `lifetime`. A failing read is skipped: it never fails the bench.
        gpu_every: Seconds between GPU samples during a run.
        started_at: The server process's start time when known otherwise (a reading before the
            bench); the GPU readings' own win.

    Raises:
        SourceError: The server failed (typed); nothing should be saved.
        BenchInvalid: The server restarted or changed its flags during the bench, or its stream
            arrived buffered (no timing to measure).
    """
    metrics_before = await _metrics_or_none(connection)
    streams = protocol.concurrency

    def probe() -> Awaitable[ProbeResult]:
        return connection.probe(
            prompt=protocol.prompt,
            max_tokens=protocol.max_tokens,
            temperature=protocol.temperature,
        )

    for i in range(protocol.warmup):
        for j, result in enumerate(await _together(probe, streams)):
            if on_progress:
                index = i * streams + j + 1
                on_progress(
                    Progress("warmup", index, protocol.warmup * streams, run_figures(result))
                )
    gpu = _GpuSamples(gpu_state, gpu_every)
    await gpu.sample()
    runs: list[RunFigures] = []
    for _ in range(protocol.runs):
        for result in await gpu.during(_together(probe, streams)):
            figures = run_figures(result)
            if figures.buffered:
                raise BenchInvalid(f"{url}: {BUFFERED_STREAM}; nothing saved")
            runs.append(figures)
            if on_progress:
                on_progress(Progress("run", len(runs), protocol.runs * streams, figures))
    await gpu.sample()
    info_after = await connection.info()
    if _restarted(info, info_after):
        raise BenchInvalid("the server restarted or changed its flags during the bench")
    if info.speculative is None and info_after.speculative is not None:
        # Speculation that shows only once a request has finished (TensorRT-LLM's per-position
        # counters): what the server showed after its runs is what it ran.
        info = info_after
    metrics_after = await _metrics_or_none(connection)
    if metrics_before and metrics_after and any_reset(metrics_before, metrics_after):
        raise BenchInvalid("the server's counters went down during the bench: it restarted")
    restarted = [w.url for w in metrics_after.workers if w.reset] if metrics_after else []
    if restarted:  # behind a router: a worker's counters went down (the sums never do)
        raise BenchInvalid(f"worker {', '.join(restarted)} restarted during the bench")
    processes = [t.server_process for t in gpu.readings if t.server_process is not None]
    if processes:
        started_at = processes[-1].start_time
    return Snapshot(
        created_at=wall(),
        url=url,
        label=label,
        server=info,
        protocol=protocol,
        runs=tuple(runs),
        gpu=summarize_gpu_state(gpu.readings),
        lifetime=lifetime_of(info_after, metrics_after, started_at),
    )
