"""Shared by the session tests that watch a simulator: samples feeding a LiveState for a
block, and `check --json` of a server with its lifetime taken as unchanged."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from specmon.analysis.validity import LifetimeCheck, LifetimeState
from specmon.check import run_check
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, Sample, Snapshot
from specmon.reports.check_report import report_to_dict
from specmon.session.live import LiveState
from specmon.session.watch import Watch
from specmon.sim import SimConfig
from specmon.sources.backends import Connection
from specmon.target import Target


@contextlib.asynccontextmanager
async def sampled(watch: Watch, live: LiveState) -> AsyncIterator[Sample]:
    """Samples feed `live` for the block (the probe needs the connection), from the first
    with the server's info (yielded)."""
    known = asyncio.Event()

    def emit(sample: Sample) -> None:
        live.on_sample(sample)
        if live.server.info is not None:
            known.set()

    sampling = asyncio.create_task(watch.sample(emit, lambda _error: None))
    try:
        await asyncio.wait_for(known.wait(), timeout=30)
        assert live.sample is not None
        yield live.sample
    finally:
        sampling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampling


async def check_json(url: str, probe_tokens: int, **options: Any) -> dict[str, Any]:
    """`check --json` of the server at `url` (its lifetime taken as the same), as a dict."""

    async def probe(protocol: Protocol) -> Snapshot:
        return await take_snapshot(Target(url), protocol, kind=SnapshotKind.RUN)

    async def same(_baseline: Snapshot) -> LifetimeCheck:
        return LifetimeCheck(LifetimeState.SAME, "the same server process")

    async with httpx.AsyncClient(base_url=url, timeout=30.0) as client:
        report = await run_check(
            Connection(client),
            url,
            run_probe=probe,
            check_lifetime=same,
            probe_tokens=probe_tokens,
            **options,
        )
    return report_to_dict(report)


ADAPTIVE = SimConfig(
    plain_step_ms=1.0,
    cycle_ms=1.6,
    ttft_ms=1.0,
    prefill_ms_per_token=0.0,
    concurrency_slowdown=0.0,
    speculative_num_steps=3,
    speculative_num_draft_tokens=4,
    accept_length=2.2,
    adaptive_drafts=((1, 3), (8, 0)),  # k = 3 up to 7 running requests, no drafting from 8
    seed=5,
)
"""The simulator in adaptive mode that the drafting tests watch (phases, a dip)."""
