"""The server specmon launched (`specmon launch`): a baseline relaunches it without speculation
and restores it with speculation, after a success or a cancel (Esc)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from ab_helpers import info_of, managed, sims_left

from specmon.model import Protocol

pytestmark = pytest.mark.slow  # launches and relaunches simulator processes

PROTOCOL = Protocol(3, 1, 48, 0.0, "Count.")


async def test_a_baseline_relaunched_without_speculation_then_restored(tmp_path: Path) -> None:
    server = managed(tmp_path)
    try:
        await server.start()
        assert (await info_of(server)).speculative is not None
        notes: list[str] = []
        snapshot = await server.take_baseline(PROTOCOL, say=notes.append)
        assert snapshot.server.speculative is None
        assert snapshot.server.args["max_running_requests"] == 48  # pinned as on the spec side
        assert (await info_of(server)).speculative is not None  # restored
        assert notes == [
            "starting the baseline server",
            "the baseline server is up",
            "benching the baseline",
            "starting the speculative server",
            "the speculative server is up",
        ]
    finally:
        server.stop()
    assert sims_left() == []


async def test_a_cancelled_baseline_restores_the_speculative_server(tmp_path: Path) -> None:
    server = managed(tmp_path)
    try:
        await server.start()
        task: asyncio.Task[object] | None = None

        def esc(_: object) -> None:
            assert task is not None
            task.cancel()

        task = asyncio.ensure_future(server.take_baseline(PROTOCOL, on_progress=esc))
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await info_of(server)).speculative is not None
        assert len(sims_left()) == 1  # the speculative one, and only it
    finally:
        server.stop()
    assert sims_left() == []
