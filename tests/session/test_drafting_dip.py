"""Issue 35's done-means on switches: the simulator in adaptive mode with a short dip to k = 0
(the batch crosses its bucket for a moment), read by two sessions scraping at their own
intervals and phases (the dashboard's and the exporter's) and `check` probing beside the dip:
the same switch count on all (in the View the fleet row reads, and in the exporter's counter),
and no accept length above k + 1 in any band.

The clock of each scrape is the event loop's (the server's and the reader's time); the test
waits for conditions (the readers' settings), never asserts a duration.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from watching import ADAPTIVE as WATCHED
from watching import check_json

from specmon.config import FleetTarget, MonitorConfig
from specmon.exporter.metrics import ExportedTarget, render
from specmon.model import Reading, Sample, ServerInfo
from specmon.session.drafting import DraftingTracker
from specmon.session.server_session import ServerSession
from specmon.sim import SimServer
from specmon.sources.backends import Backend, connect
from specmon.target import Target

pytestmark = pytest.mark.slow  # the simulator under load for a few seconds

# The scheduler's gauges published at every decode step: a short dip is seen by a fast reader.
ADAPTIVE = replace(WATCHED, extra_args={"decode_log_interval": 1}, seed=7)


class Reader:
    """One surface's session, scraping every `every` seconds of the loop's clock."""

    def __init__(self, url: str, backend: Backend, info: ServerInfo, every: float) -> None:
        self.backend, self.info, self.every, self.seq = backend, info, every, 0
        config = MonitorConfig(url=url, interval=every, probe=False)
        self.session = ServerSession.of_target(
            FleetTarget(url), Target(url), config, None, probing=False
        )

    async def run(self, client: httpx.AsyncClient) -> None:
        loop = asyncio.get_running_loop()
        while True:
            metrics = await self.backend.metrics(client)
            t = loop.time()
            self.seq += 1
            readings: dict[str, Reading] = {
                "info": Reading(self.info, t, self.seq, None, None),
                "metrics": Reading(metrics, t, self.seq, None, None),
            }
            self.session.sample(Sample(t, 1.7e9 + t, MappingProxyType(readings)))
            await asyncio.sleep(self.every)

    @property
    def tracker(self) -> DraftingTracker:
        return self.session.live.server.drafting


async def streams(client: httpx.AsyncClient, n: int, tokens: int) -> None:
    body = {"text": "load", "stream": True}
    body["sampling_params"] = {"max_new_tokens": tokens, "ignore_eos": True}  # type: ignore[assignment]

    async def one() -> None:
        async with client.stream("POST", "/generate", json=body) as response:
            async for _ in response.aiter_lines():
                pass

    await asyncio.gather(*(one() for _ in range(n)))


async def until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(20_000):  # bounded by steps, not by a duration
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(what)


async def test_a_short_dip_is_no_switch_on_any_surface_and_a_held_one_is_one() -> None:
    async with (
        SimServer(ADAPTIVE) as sim,
        httpx.AsyncClient(base_url=sim.url, timeout=30.0) as client,
    ):
        found, info = await connect(client)
        readers = [Reader(sim.url, found, info, every) for every in (0.1, 0.37)]
        tasks = [asyncio.create_task(r.run(client)) for r in readers]
        try:
            one = asyncio.create_task(streams(client, 1, 4000))  # k 3 throughout
            await until(lambda: all(r.tracker.level == 3 for r in readers), "k 3 seen")
            # The dip (well under a second of 10 running), while `check` probes beside it.
            body, _ = await asyncio.gather(check_json(sim.url, 64), streams(client, 10, 300))
            await until(lambda: all(r.tracker._seen == 3 for r in readers), "back at k 3")
            assert [r.tracker.switches for r in readers] == [0, 0]
            assert readers[0].tracker.transients >= 1  # the dip was there, told as transient
            assert body["drafting"]["switches"] == []  # `check` agrees: no switch
            held = asyncio.create_task(streams(client, 10, 8000))  # off for longer than HOLD_S
            await until(lambda: all(r.tracker.level == 0 for r in readers), "off held")
            held.cancel()
            one.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(held, one)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        assert [r.tracker.switches for r in readers] == [1, 1]
        for reader in readers:
            view = reader.session.view()
            assert view.spec.drafting is not None and view.spec.drafting.switches == 1
            text = render([ExportedTarget(reader.session)]).decode()
            exported = [
                s.value
                for f in text_string_to_metric_families(text)
                for s in f.samples
                if s.name == "specmon_drafting_switches_total"
            ]
            assert exported == [1.0]
            for band in reader.tracker.by_load():
                assert band.accept_length is None or band.accept_length <= 3 + 1
            # The intervals spanning a change are marked, and binned nowhere.
            assert any(load.transition for _, load in reader.tracker.loads)
