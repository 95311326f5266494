"""Router mode against the simulator: a spec-blind router takes the probe, two or three
simulated workers serve server info and /metrics; their counters are summed per worker, a worker
killed mid-run is named and left out, a restarted one adds no negative and no spike, and workers
of different models are refused, naming each."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator

import pytest
from router import router

from specmon.errors import SourceError, WorkersDisagree
from specmon.sim import SimConfig, SimServer
from specmon.sources.backends import Connection
from specmon.sources.http import make_client
from specmon.sources.workers import open_connection
from specmon.target import Target

pytestmark = pytest.mark.slow  # servers on loopback

FAST = SimConfig(plain_step_ms=0.5, cycle_ms=0.5, ttft_ms=1.0, prefill_ms_per_token=0.0)


@contextlib.asynccontextmanager
async def deployment(
    *configs: SimConfig, read_timeout: float = 5.0
) -> AsyncIterator[tuple[list[SimServer], Connection]]:
    """Workers of `configs`, a router in front of them, and the router's connection."""
    async with contextlib.AsyncExitStack() as stack:
        sims = [await stack.enter_async_context(SimServer(c)) for c in configs]
        url = await stack.enter_async_context(router([s.url for s in sims]))
        workers = tuple(s.url for s in sims)
        target = Target(url, read_timeout=read_timeout, metrics_urls=workers)
        yield sims, await stack.enter_async_context(open_connection(target, make_client))


async def test_info_from_the_workers_counters_summed_and_the_probe_through_the_router() -> None:
    async with deployment(FAST, FAST) as (sims, connection):
        info = await connection.info()
        assert info.backend == "sglang" and info.speculative is not None
        fresh = await connection.metrics()  # no request yet: SGLang's token counters unborn
        await connection.probe(prompt="Count.", max_tokens=10)
        before = await connection.metrics()
        for _ in range(2):  # one probe to each worker, in turn
            result = await connection.probe(prompt="Count.", max_tokens=64)
            assert result.verify_ct is not None  # the workers' backend reads the router's stream
        after = await connection.metrics()
        own = []
        for sim in sims:
            async with make_client(Target(sim.url)) as client:
                own.append(await Connection(client).metrics())
    assert fresh.generation_tokens_total is None  # unknown, not 0
    assert before.generation_tokens_total == 10 and after.generation_tokens_total is not None
    assert after.generation_tokens_total - before.generation_tokens_total == 2 * 64
    assert after.generation_tokens_total == sum(m.generation_tokens_total or 0 for m in own)
    assert [w.up for w in after.workers] == [True, True]


async def test_a_worker_killed_mid_run_is_named_and_left_out_and_its_restart_adds_no_spike() -> (
    None
):
    async with deployment(FAST, FAST, FAST) as (sims, connection):
        await connection.info()
        await connection.probe(prompt="Count.", max_tokens=50)  # the first worker
        first = await connection.metrics()
        await sims[1].stop()
        await connection.probe(prompt="Count.", max_tokens=40)  # the third (the router skips none)
        down = await connection.metrics()
        await sims[1].start()  # its counters from 0 again
        back = await connection.metrics()
        await sims[0].restart()  # between two scrapes: its counters go down
        await connection.probe(prompt="Count.", max_tokens=30)  # the first worker, restarted
        restarted = await connection.metrics()
    totals = [m.generation_tokens_total for m in (first, down, back, restarted)]
    assert totals[0] is not None
    assert totals == [totals[0], totals[0] + 40, totals[0] + 40, totals[0] + 40 + 30]
    (gone,) = down.down_workers
    assert gone.url == sims[1].url and gone.down_since is not None
    assert "connection refused" in (gone.error or "")
    assert not back.down_workers and not any(w.reset for w in back.workers)
    assert [w.reset for w in restarted.workers] == [True, False, False]


async def test_a_hung_worker_is_named_after_the_read_timeout() -> None:
    async with deployment(FAST, FAST, read_timeout=0.2) as (sims, connection):
        await connection.info()
        sims[1].faults.hang.add("/metrics")
        scrape = await connection.metrics()
    (hung,) = scrape.down_workers
    assert hung.url == sims[1].url and "no answer within the read timeout" in (hung.error or "")


async def test_every_worker_down_is_an_error_naming_each() -> None:
    async with deployment(FAST, FAST) as (sims, connection):
        await connection.metrics()
        for sim in sims:
            await sim.stop()
        with pytest.raises(SourceError, match="no worker behind the router answered") as failed:
            await connection.metrics()
    assert all(s.url in str(failed.value) for s in sims)


async def test_workers_of_different_models_are_refused_naming_each() -> None:
    other = dataclasses.replace(FAST, model_path="other/model")
    async with deployment(FAST, other) as (sims, connection):
        with pytest.raises(WorkersDisagree, match="differ in model") as info:
            await connection.info()
        with pytest.raises(WorkersDisagree):
            await connection.metrics()
    assert sims[0].url in str(info.value) and "other/model" in str(info.value)


@pytest.mark.parametrize("backend", ["vllm", "llamacpp"])
async def test_a_probe_reads_the_workers_sums_around_itself(backend: str) -> None:
    """vLLM's and llama.cpp's probes read /metrics before and after their stream: behind a
    router, the workers' (the router serves none of their counters)."""
    config = dataclasses.replace(FAST, backend=backend)
    async with deployment(config, config) as (_sims, connection):
        info = await connection.info()
        result = await connection.probe(prompt="Count.", max_tokens=48)
    assert info.backend == backend
    assert result.scrapes is not None
    before, after = result.scrapes
    assert before.generation_tokens_total is not None
    assert after.generation_tokens_total == before.generation_tokens_total + 48
    assert result.verify_ct is not None  # speculation seen in the workers' counters
