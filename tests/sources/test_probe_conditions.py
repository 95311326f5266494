"""The conditions around a probe, recorded against the simulator: another stream in flight beside
it, a second specmon probing the same server, specmon's own streams of a bench, and a client
whose event loop is starved. No wall time is asserted: load readings are taken back to back
while the probe streams, and the starved loop is late by at least what a blocking hog holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx

from specmon.analysis.conditions import STARVED_LAG_MS, conditions_of
from specmon.analysis.figures import run_figures
from specmon.analysis.validity import (
    LifetimeCheck,
    LifetimeState,
    ValidityState,
    baseline_validity,
)
from specmon.measure.bench import run_bench
from specmon.model import ProbeResult, Protocol, RunConditions, ServerInfo, Snapshot
from specmon.sim import SimConfig, SimServer
from specmon.sources.backends import Connection
from specmon.sources.conditions import ConditionsWatch
from specmon.sources.host import cpu_times
from specmon.wording import validity_mark

# Millisecond steps, and the scheduler gauges published at every decode step (SGLang's
# `decode_log_interval`; 40 by default) so that a reading while the probe streams counts it.
FAST = SimConfig(
    plain_step_ms=1.0,
    cycle_ms=1.5,
    ttft_ms=2.0,
    prefill_ms_per_token=0.0,
    extra_args={"decode_log_interval": 1},
)
PROMPT = "one two three four five six seven eight nine ten " * 6
PROBE_TOKENS = 400
SAME = LifetimeCheck(LifetimeState.SAME, "the same server process")


def _connection(client: httpx.AsyncClient, *, tick_s: float | None = None) -> Connection:
    """A connection whose watch reads the load back to back while a probe streams."""
    connection = Connection(client)
    connection.conditions = ConditionsWatch(
        connection.metrics, cpu=cpu_times, tick_s=tick_s, first_scrape_s=0.0, scrape_every_s=0.0
    )
    return connection


async def _probe(connection: Connection, tokens: int = PROBE_TOKENS) -> ProbeResult:
    return await connection.probe(prompt=PROMPT, max_tokens=tokens)


@contextlib.asynccontextmanager
async def _another_stream(sim: SimServer) -> AsyncIterator[None]:
    """Another client's long generation, in flight (its first token read) until the block ends."""
    started = asyncio.Event()

    async def stream() -> None:
        body = {
            "text": "another client's prompt",
            "sampling_params": {"max_new_tokens": 100_000, "temperature": 0, "ignore_eos": True},
            "stream": True,
        }
        async with (
            httpx.AsyncClient(base_url=sim.url, timeout=30) as client,
            client.stream("POST", "/generate", json=body) as answer,
        ):
            async for _ in answer.aiter_lines():
                started.set()

    task = asyncio.ensure_future(stream())
    try:
        await started.wait()
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_probe_alone_records_that_it_ran_alone() -> None:
    async with SimServer(FAST) as sim, httpx.AsyncClient(base_url=sim.url, timeout=10) as client:
        result = await _probe(_connection(client))
    conditions = result.conditions
    assert conditions is not None
    assert conditions.load_readings > 0
    assert conditions.others_running == 0
    assert conditions.queued == 0


async def test_a_probe_beside_another_stream_records_it_and_the_comparison_says_so() -> None:
    async with SimServer(FAST) as sim, httpx.AsyncClient(base_url=sim.url, timeout=10) as client:
        connection = _connection(client)
        info = await connection.info()
        alone = await _probe(connection)
        async with _another_stream(sim):
            beside = await _probe(connection)
    assert alone.conditions is not None and alone.conditions.others_running == 0
    assert beside.conditions is not None and beside.conditions.others_running == 1
    # A baseline whose runs ran alone, against the probe that ran beside the other stream.
    baseline = _baseline(info, alone, alone.conditions)
    validity = baseline_validity(
        baseline,
        info,
        now=baseline.created_at,
        lifetime=SAME,
        protocol=replace(baseline.protocol, runs=1),
        conditions=conditions_of([beside.conditions]),
    )
    assert validity.valid and not validity.confirmed
    assert validity.state == ValidityState.UNVERIFIED
    assert validity.conditions == ("the probe ran beside 1 other request; the baseline ran alone",)
    assert validity_mark(validity) == (
        "? conditions differ: the probe ran beside 1 other request; the baseline ran alone"
    )


async def test_a_second_specmon_on_the_server_makes_the_first_say_so_within_two_probes() -> None:
    async with (
        SimServer(FAST) as sim,
        httpx.AsyncClient(base_url=sim.url, timeout=10) as first_client,
        httpx.AsyncClient(base_url=sim.url, timeout=10) as second_client,
    ):
        first, second = _connection(first_client), _connection(second_client)
        # The first specmon's probe alone; then the second starts probing (a longer probe, in
        # flight before the first's next one starts and after it ends).
        one = await _probe(first)
        other = asyncio.ensure_future(_probe(second, 20_000))
        # Until its request decodes, a turn of the loop at a time (the engine has no event).
        while not sim.state.engine.running:  # noqa: ASYNC110
            await asyncio.sleep(0)
        two = await _probe(first)
        other.cancel()
        await asyncio.gather(other, return_exceptions=True)
    assert one.conditions is not None and one.conditions.others_running == 0
    assert two.conditions is not None and two.conditions.others_running == 1


async def test_a_bench_does_not_count_its_own_streams_as_company() -> None:
    async with SimServer(FAST) as sim, httpx.AsyncClient(base_url=sim.url, timeout=10) as client:
        connection = _connection(client)
        info = await connection.info()
        protocol = Protocol(2, 0, PROBE_TOKENS, 0.0, PROMPT, concurrency=3)
        snapshot = await run_bench(connection, sim.url, info, protocol)
    assert len(snapshot.runs) == 6
    known = [r.conditions for r in snapshot.runs if r.conditions is not None]
    assert len(known) == 6
    assert any(c.load_readings for c in known)
    # Each stream's readings count specmon's three streams in flight, and only those.
    assert {c.others_running for c in known if c.load_readings} == {0}


async def test_a_starved_client_is_recorded_and_the_comparison_says_so() -> None:
    block_s, tick_s = 0.01, 0.002
    stop = False

    async def hog() -> None:
        # Another task of specmon's process that blocks its event loop: every tick of the lag
        # timer is at least `block_s - tick_s` late, however fast the machine.
        while not stop:
            time.sleep(block_s)  # noqa: ASYNC251 (the point: it blocks the loop)
            await asyncio.sleep(0)

    async with SimServer(FAST) as sim, httpx.AsyncClient(base_url=sim.url, timeout=30) as client:
        connection = _connection(client, tick_s=tick_s)
        info = await connection.info()
        quiet = await _probe(connection, 100)
        hogging = asyncio.ensure_future(hog())
        try:
            starved = await _probe(connection, 100)
        finally:
            stop = True
            await hogging
    assert starved.conditions is not None and starved.conditions.read_lag_ms is not None
    assert starved.conditions.read_lag_ms >= 1000 * (block_s - tick_s) >= STARVED_LAG_MS
    assert starved.conditions.host_cpu_pct is not None
    base = _baseline(info, quiet, RunConditions(others_running=0, load_readings=3, read_lag_ms=0.1))
    validity = baseline_validity(
        base,
        info,
        now=base.created_at,
        lifetime=SAME,
        protocol=replace(base.protocol, runs=1),
        conditions=conditions_of([starved.conditions]),
    )
    assert [c.split(" (")[0] for c in validity.conditions] == [
        "specmon's machine was starved of CPU during the probe"
    ]
    assert "not during the baseline" in validity.conditions[0]
    assert quiet.conditions is not None  # recorded either way; how late depends on the machine


def _baseline(info: ServerInfo, like: ProbeResult, conditions: RunConditions) -> Snapshot:
    """A plain baseline of the simulator's configuration: three runs of `like`'s figures, run
    under `conditions`."""
    run = replace(run_figures(like), conditions=conditions)
    return Snapshot(
        created_at=time.time(),
        url="http://baseline:30000",
        label=None,
        server=replace(info, speculative=None),
        protocol=Protocol(3, 0, PROBE_TOKENS, 0.0, PROMPT),
        runs=(run, run, run),
    )
