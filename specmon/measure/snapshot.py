"""`take_snapshot`: the one way a bench is run, for `bench`, `check`, the dashboard's `b`/`s`.

It connects, refuses a speculative server as a baseline, samples the GPUs along the runs (so
every snapshot carries GPU state and its server's process start), runs the bench protocol and
returns the Snapshot; nothing is saved here (the caller saves only a complete one).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from specmon.analysis.gpus import models
from specmon.errors import SourceError, SpecmonError
from specmon.measure.bench import BenchInvalid, Progress, run_bench
from specmon.model import Protocol, ServerInfo, Snapshot, Telemetry
from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.sources.http import make_client
from specmon.sources.telemetry import TelemetrySource, open_telemetry
from specmon.sources.workers import open_connection
from specmon.target import Target

__all__ = ["BENCH_ATTEMPTS", "NotABaseline", "Progress", "SnapshotKind", "default_protocol",
           "take_snapshot"]  # fmt: skip

BENCH_ATTEMPTS = 3
"""A bench refused as untrustworthy (a stream that arrived buffered: the client, starved of a
CPU, read a fast server's whole stream at once; counters that went down) is run up to twice
more, saying so each time, before it fails: a starved moment of the client should not cost the
user a baseline, nor an A/B the launches before it (on a loaded 2-core machine two refusals in a
row were seen against a small model's fast streams)."""


class SnapshotKind(StrEnum):
    """What a snapshot is taken for."""

    BASELINE = "baseline"
    """Speculation must be off."""
    RUN = "snapshot"
    """Any configuration, labelled by the user."""


def default_protocol(runs: int, warmup: int, tokens: int) -> Protocol:
    """The protocol of the dashboard's probes and benches: the built-in prompt, greedy."""
    return Protocol(runs, warmup, tokens, 0.0, DEFAULT_PROMPT)


class NotABaseline(SpecmonError):
    """A baseline was asked of a server that runs with speculation."""


@dataclass(frozen=True, slots=True)
class GpuReader:
    """What a telemetry source offers a bench: a reader to sample along the runs (None without
    GPUs: sampling psutil along the runs would only load the server's machine) and the server
    process's start time from the first reading."""

    read: Callable[[], Awaitable[Telemetry]] | None
    started_at: float | None


async def gpu_reader(telemetry: TelemetrySource, say: Callable[[str], None]) -> GpuReader:
    """The telemetry to sample along a bench, after saying what it sees."""
    try:
        first = await telemetry.read()
    except SourceError as exc:
        say(f"GPUs: not recorded: {exc}")
        return GpuReader(None, None)
    process = first.server_process
    started_at = process.start_time if process is not None else None
    if first.unavailable is not None or not first.gpus:
        hint = f"; {first.hint}" if first.hint else ""
        say(f"GPUs: not recorded: {first.unavailable or 'none seen'}{hint}")
        return GpuReader(None, started_at)
    say(f"GPUs: {models(first.gpus)} ({first.source}), sampled during the runs")
    return GpuReader(telemetry.read, started_at)


async def take_snapshot(
    target: Target,
    protocol: Protocol,
    *,
    kind: SnapshotKind,
    label: str | None = None,
    gpu_metrics: str | None = None,
    on_connect: Callable[[ServerInfo], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    say: Callable[[str], None] = lambda _line: None,
    again: Callable[[str], None] | None = None,
    wall: Callable[[], float] = time.time,
) -> Snapshot:
    """Run the bench protocol against `target` and return the complete Snapshot.

    Args:
        target: The server and how to talk to it.
        protocol: Warm-up and run counts, tokens, prompt.
        kind: A baseline refuses a speculative server.
        label: The user's label.
        gpu_metrics: A DCGM-style endpoint for the GPUs (`--gpu-metrics`); by default NVML here
            or port 9400 of the server's host.
        on_connect: Called with the server info before the runs.
        on_progress: Called after every warm-up and timed run.
        say: Receives one-line notes (what the GPUs show; that a refused bench runs again).
        again: Receives the note that a refused bench runs again instead of `say`.
        wall: Wall clock for the snapshot's time.

    A bench refused as untrustworthy is run again from the connection on, saying so, up to
    `BENCH_ATTEMPTS` in all.

    Raises:
        NotABaseline: A baseline asked of a speculative server.
        SourceError: The server failed (typed).
        BenchInvalid: The server restarted mid-bench, or its stream arrived buffered, at every
            attempt (the last attempt's reason).
        TargetError: `gpu_metrics` is not a usable address.
    """
    telemetry = await open_telemetry(target.url, gpu_metrics=gpu_metrics)
    try:
        async with open_connection(target, make_client) as connection:

            def plain(info: ServerInfo) -> None:
                if kind == SnapshotKind.BASELINE and info.speculative is not None:
                    raise NotABaseline(
                        f"{target.url} runs with speculation ({info.speculative.describe()}): a "
                        "baseline needs the same server without its speculative flags (even "
                        "drafting nothing at its load, an adaptive server at k = 0 keeps its "
                        "draft machinery running: it is no plain server)"
                    )

            async def bench() -> Snapshot:
                info = await connection.info()
                plain(info)
                if on_connect is not None:
                    on_connect(info)
                gpus = await gpu_reader(telemetry, say)
                snapshot = await run_bench(
                    connection,
                    target.url,
                    info,
                    protocol,
                    label=label,
                    on_progress=on_progress,
                    wall=wall,
                    gpu_state=gpus.read,
                    started_at=gpus.started_at,
                )
                plain(snapshot.server)  # speculation that showed only after the runs
                return snapshot

            prefix, tell = f"{label}: " if label else "", again or say
            return await _bench_again_if_refused(
                bench, lambda exc: tell(f"{prefix}{exc}; benching it again")
            )
    finally:
        await telemetry.aclose()


async def _bench_again_if_refused(
    bench: Callable[[], Awaitable[Snapshot]], refused: Callable[[BenchInvalid], None]
) -> Snapshot:
    """`bench()`, run again when refused as untrustworthy, up to `BENCH_ATTEMPTS` in all;
    `refused` hears each refusal but the last, which is raised."""
    for _ in range(BENCH_ATTEMPTS - 1):
        try:
            return await bench()
        except BenchInvalid as exc:
            refused(exc)
    return await bench()
