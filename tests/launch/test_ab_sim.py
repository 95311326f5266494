"""`run_ab` against the simulator launched as a real server process with SGLang's flag names:
figures that agree with separate benches, valid pairs, and every fault leaving no process."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from ab_helpers import Launched, free_port, overlap

from specmon.analysis.ab_runs import Side, levels
from specmon.analysis.comparison import compare
from specmon.analysis.pooled import pool
from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.launch.ab import AbEvents, AbPlan, bench_level, run_ab, target_for
from specmon.launch.process import LaunchFailed, ServerProcess
from specmon.launch.split import Launch, Split, split_command
from specmon.measure.bench import BenchInvalid
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, Snapshot
from specmon.sim import SimConfig, SimThread
from specmon.sim.__main__ import config_from_args
from specmon.target import Target

PROTOCOL = Protocol(runs=3, warmup=1, max_tokens=48, temperature=0.0, prompt="Count to ten.")
# Fast decode, so that a bench takes well under a second; speculation wins at one stream.
SIM_FLAGS = ["--plain-step-ms", "6", "--cycle-ms", "9", "--ttft-ms", "5", "--enable-metrics"]


def sim_split(port: int, *extra: str) -> Split:
    command = [sys.executable, "-m", "specmon.sim", *SIM_FLAGS, "--port", str(port)]
    spec = ["--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "4"]
    return split_command([*command, *spec, "--accept-length", "2.5", *extra], {})


def plan_for(split: Split, tmp_path: Path, *concurrencies: int, rounds: int = 1) -> AbPlan:
    return AbPlan(
        split=split,
        target=target_for(split, Target("http://127.0.0.1")),
        protocol=PROTOCOL,
        concurrencies=concurrencies or (1,),
        rounds=rounds,
        health_timeout_s=60,
        logs=tmp_path,
    )


def test_sglang_resolves_scheduling_args_that_the_pins_then_equalise() -> None:
    # Why the pin exists: without it the two servers report different max_running_requests.
    assert config_from_args(["--speculative-algorithm", "NGRAM"]).extra_args == {
        "max_running_requests": 48
    }
    assert config_from_args(["--speculative-algorithm", "none"]).extra_args == {}
    pinned = ["--max-running-requests", "48", "--enable-mixed-chunk"]
    assert config_from_args(["--speculative-algorithm", "NGRAM", *pinned]).extra_args == {
        "max_running_requests": 48,
        "enable_mixed_chunk": False,
    }


async def _separate(split: Split, tmp_path: Path, concurrency: int) -> tuple[Snapshot, Snapshot]:
    """The two servers benched one after the other by hand, not through `run_ab`."""
    found: list[Snapshot] = []
    target = target_for(split, Target("http://127.0.0.1"))
    for name, launch in (("base", split.baseline), ("spec", split.speculative)):
        server = ServerProcess(launch, tmp_path / f"separate-{name}.log")
        server.start()
        try:
            await server.wait_healthy(target.url, 60)
            protocol = dataclasses.replace(PROTOCOL, concurrency=concurrency)
            found.append(await take_snapshot(target, protocol, kind=SnapshotKind.RUN))
        finally:
            server.stop()
    return found[0], found[1]


@pytest.mark.slow
async def test_ab_matches_separate_benches_at_one_and_four_streams(tmp_path: Path) -> None:
    launched = Launched()
    split = sim_split(free_port())
    runs = await run_ab(plan_for(split, tmp_path, 1, 4, rounds=2), launched.events())
    launched.assert_none_left()
    assert len(launched.servers) == 4  # ABAB
    assert [(r.round, r.side.value, r.snapshot.protocol.concurrency) for r in runs] == [
        (rnd, side, c) for rnd in (1, 2) for side in ("baseline", "speculative") for c in (1, 4)
    ]
    assert runs[0].snapshot.label == "ab baseline, 1 stream, round 1"  # not "1 streams"
    assert runs[3].snapshot.label == "ab speculative, 4 streams, round 1"
    for run in runs:
        assert len(run.snapshot.runs) == PROTOCOL.runs * run.snapshot.protocol.concurrency
        assert run.snapshot.server.args["max_running_requests"] == 48  # pinned on both
    found = levels(runs, max_age_s=DEFAULT_MAX_AGE_S)
    assert [lv.concurrency for lv in found] == [1, 4]
    for lv in found:
        assert lv.valid, [v.reasons for v in lv.validity]  # valid pairs by construction
        assert lv.comparison is not None
        assert lv.speculative.accept_length is not None and lv.baseline.accept_length is None
        assert lv.baseline_throughput is not None and lv.speculative_throughput is not None
        # Each round launched each server: the rounds' spread is in the interval.
        assert lv.spread is not None and lv.spread.rounds == 2
        base, spec = await _separate(split, tmp_path, lv.concurrency)
        separate = compare(pool(spec.runs), pool(base.runs))
        assert separate is not None
        assert overlap(lv.comparison.speedup, separate.speedup), (lv.concurrency, separate)
    # Four streams at once: more tokens per second in all than one stream alone.
    assert found[1].baseline_throughput > found[0].baseline_throughput  # type: ignore[operator]


async def test_a_program_that_cannot_run(tmp_path: Path) -> None:
    split = split_command(
        [str(tmp_path / "llama-server"), "-m", "t.gguf", "-md", "d.gguf", "--port", "1"], {}
    )
    with pytest.raises(LaunchFailed, match="cannot run"):
        await run_ab(plan_for(split, tmp_path))


@pytest.mark.slow
async def test_a_server_that_exits_before_it_is_up(tmp_path: Path) -> None:
    launched = Launched()
    split = sim_split(free_port(), "--sglang-version", "9.9")
    with pytest.raises(LaunchFailed, match=r"exited with status 2 before it was up.*9\.9"):
        await run_ab(plan_for(split, tmp_path), launched.events())
    launched.assert_none_left()


async def test_a_port_taken_is_refused_before_anything_starts(tmp_path: Path) -> None:
    launched = Launched()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        split = sim_split(taken.getsockname()[1])
        with pytest.raises(LaunchFailed, match="is taken"):
            await run_ab(plan_for(split, tmp_path), launched.events())
    assert launched.servers == []


@pytest.mark.slow
async def test_a_crash_mid_run_names_the_server_and_leaves_nothing(tmp_path: Path) -> None:
    launched = Launched()

    def crash(*_: object) -> None:
        server = launched.servers[-1]
        assert server.pgid is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pgid, signal.SIGKILL)

    events = dataclasses.replace(launched.events(), progress=crash)
    with pytest.raises(LaunchFailed, match="baseline server exited with status -9 during"):
        await run_ab(plan_for(sim_split(free_port()), tmp_path), events)
    launched.assert_none_left()


@pytest.mark.slow
async def test_cancelled_mid_bench_stops_the_server(tmp_path: Path) -> None:
    launched = Launched()
    task: asyncio.Task[object] | None = None

    def interrupt(*_: object) -> None:
        assert task is not None
        task.cancel()  # what Ctrl-C does to the command's main task (cli/stopping.py)

    events = AbEvents(launched=launched.servers.append, progress=interrupt)
    task = asyncio.ensure_future(run_ab(plan_for(sim_split(free_port()), tmp_path), events))
    with pytest.raises(asyncio.CancelledError):
        await task
    launched.assert_none_left()


@pytest.mark.slow
async def test_a_bench_refused_as_buffered_is_run_once_more(tmp_path: Path) -> None:
    # A stream that arrived buffered (the client fell behind its N streams) says nothing of the
    # server: the bench is refused and run again once, saying so; twice refused, the A/B stops.
    with SimThread(SimConfig(plain_step_ms=4.0, cycle_ms=7.0, ttft_ms=5.0)) as sim:
        split = sim_split(int(sim.url.rsplit(":", 1)[1]))
        plan = plan_for(split, tmp_path)
        notes: list[str] = []

        def say(line: str) -> None:
            notes.append(line)
            if line.endswith("benching it again"):
                sim.server.faults.buffer_stream = False  # the second attempt streams normally

        sim.server.faults.buffer_stream = True
        unlaunched = ServerProcess(split.speculative, tmp_path / "never.log")
        snapshot = await bench_level(plan, unlaunched, Side.SPECULATIVE, "x", 1, AbEvents(say))
        assert len(snapshot.runs) == PROTOCOL.runs
        assert [n for n in notes if "again" in n] == [
            f"x: {sim.url}: the stream's chunks arrived together (a buffering proxy, or this "
            "machine too busy to read them as they came?): its timing is not used; nothing "
            "saved; benching it again"
        ]
        sim.server.faults.buffer_stream = True
        with pytest.raises(BenchInvalid, match="arrived together"):
            await bench_level(plan, unlaunched, Side.SPECULATIVE, "x", 1, AbEvents())


async def test_cancelled_while_the_server_starts_stops_it(tmp_path: Path) -> None:
    launched = Launched()
    task: asyncio.Task[object] | None = None

    def interrupt(server: ServerProcess) -> None:
        launched.servers.append(server)
        assert task is not None
        task.cancel()  # lands in the wait for /health, before the server is up

    task = asyncio.ensure_future(
        run_ab(plan_for(sim_split(free_port()), tmp_path), AbEvents(launched=interrupt))
    )
    with pytest.raises(asyncio.CancelledError):
        await task
    launched.assert_none_left()


@pytest.mark.slow
async def test_a_server_that_exits_a_moment_after_its_clients_failed_is_still_named(
    tmp_path: Path,
) -> None:
    # A killed server resets its connections as the kernel closes its sockets, a moment before
    # its process can be reaped: the bench's error comes first, and the exit must still be seen.
    server = ServerProcess(Launch(("sh", "-c", "sleep 0.3; exit 3")), tmp_path / "late.log")
    server.start()
    try:
        assert await server.exited_within(5.0) == 3
    finally:
        server.stop()
    alive = ServerProcess(Launch(("sleep", "30")), tmp_path / "alive.log")
    alive.start()
    try:
        assert await alive.exited_within(0.2) is None
    finally:
        alive.stop()
