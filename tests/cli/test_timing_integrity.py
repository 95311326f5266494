"""Timing integrity against the simulator: cycle percentiles per verify step whatever the
chunking, a buffered stream refused with a clear message, vLLM's fallback step count."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from specmon.analysis.figures import run_figures
from specmon.analysis.stats import percentile
from specmon.cli import main
from specmon.measure.bench import BenchInvalid
from specmon.measure.snapshot import BENCH_ATTEMPTS, SnapshotKind, default_protocol, take_snapshot
from specmon.model import CycleBasis, ProbeChunk, ProbeResult, StepsSource
from specmon.sim import SimConfig, SimThread
from specmon.sources.http import make_client
from specmon.sources.probe import run_probe
from specmon.target import Target
from specmon.wording import BUFFERED_STREAM

# A steady cycle (no jitter from batching: one request at a time) and stream_interval 4.
STEADY = SimConfig(plain_step_ms=4.0, cycle_ms=8.0, accept_length=2.1, ttft_ms=10.0, seed=5)


@pytest.mark.slow
@pytest.mark.parametrize("interval", [1, 4])
async def test_cycle_percentiles_are_per_verify_step(interval: int) -> None:
    """Chunk gaps divided by the verify steps they span give back the server's own step times.

    The chunks are timed by when the server's model had them due, not by their arrival here: on
    this shared machine arrivals move with the scheduling of both ends (a loaded run read p50
    7.77 ms against the sends' 7.32, none of it the figures' doing). What the client parsed
    (tokens, steps, chunking) is its own.
    """
    with SimThread(replace(STEADY, stream_interval=interval)) as sim:
        async with make_client(Target(sim.url)) as client:
            results = [await run_probe(client, max_tokens=200) for _ in range(2)]
        emitted = sim.server.emitted[-2:]
    for result, record in zip(results, emitted, strict=True):
        due = dict(zip(record.chunk_completion_tokens, record.chunk_deadlines, strict=True))
        chunks = [
            ProbeChunk(due[c.completion_tokens] - record.arrival_mono, c.completion_tokens)
            for c in result.chunks
        ]
        run = run_figures(replace(result, chunks=tuple(chunks)))
        # The truth: each decode step's end after the one before (the first step is prefill's).
        truth = [1000 * (b - a) for a, b in itertools.pairwise(record.step_deadlines)]
        assert run.cycle_ms_p50 == pytest.approx(percentile(truth, 50), rel=0.01)
        assert run.cycle_ms_p50 == pytest.approx(STEADY.cycle_ms, rel=0.01)
        # p95 is a per-step figure too: raw chunk gaps with stream_interval 4 read 32 ms.
        assert run.cycle_ms_p95 == pytest.approx(percentile(truth, 95), rel=0.01)
        expected = CycleBasis.CHUNK_GAPS if interval == 1 else CycleBasis.PER_STEP
        assert run.cycle_basis == expected


@pytest.mark.slow
def test_a_buffered_stream_is_refused_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    with SimThread(STEADY) as sim:
        sim.server.faults.buffer_stream = True
        code = main(["bench", sim.url, "--runs", "2", "--max-tokens", "60", "--db", db])
        out, err = capsys.readouterr()
        assert code == 1
        # refused at every attempt: tried again each time but the last, said so
        assert out.count("benching it again") == BENCH_ATTEMPTS - 1
        assert BUFFERED_STREAM in err and "nothing saved" in err
        assert main(["snapshots", "--db", db, "list"]) == 0
        assert "No snapshots" in capsys.readouterr().out
        code = main(["check", sim.url, "--db", db, "--probe-tokens", "60"])
        out, err = capsys.readouterr()
    assert code == 1
    assert err.count("benching it again") == BENCH_ATTEMPTS - 1
    assert any(
        line.startswith("✗ probe failed:") and "buffering proxy" in line
        for line in out.splitlines()
    )


@pytest.mark.slow
async def test_a_bench_refused_once_as_buffered_is_taken_again() -> None:
    """Every bench (bench, check, b, s, whatif, ab) takes a refused bench once more, saying so;
    refused twice, it fails."""
    notes: list[str] = []
    with SimThread(STEADY) as sim:

        def say(line: str) -> None:
            notes.append(line)
            if line.endswith("benching it again"):
                sim.server.faults.buffer_stream = False  # the second attempt streams normally

        sim.server.faults.buffer_stream = True
        protocol = default_protocol(2, 1, 60)
        snapshot = await take_snapshot(
            Target(sim.url), protocol, kind=SnapshotKind.RUN, label="x", say=say
        )
        assert len(snapshot.runs) == 2 and not any(r.buffered for r in snapshot.runs)
        assert [n for n in notes if "again" in n] == [
            f"x: {sim.url}: {BUFFERED_STREAM}; nothing saved; benching it again"
        ]
        sim.server.faults.buffer_stream = True
        with pytest.raises(BenchInvalid, match="arrived together"):
            await take_snapshot(Target(sim.url), protocol, kind=SnapshotKind.RUN)


def test_identical_timestamps_give_no_rate_and_no_zero() -> None:
    chunks = tuple(ProbeChunk(0.05, n) for n in (1, 3, 5, 8))
    figures = run_figures(ProbeResult(0.0, chunks, 10, 4, None, "length"))
    assert figures.buffered
    assert (figures.decode_tok_s, figures.cycle_ms, figures.cycle_ms_p50) == (None, None, None)
    assert figures.accept_length == pytest.approx(7 / (4 * 7 / 7))
    still = run_figures(
        ProbeResult(0.0, (ProbeChunk(0.0, 1), ProbeChunk(0.0, 2)), 1, None, None, "length")
    )
    assert still.e2e_tok_s is None and still.decode_tok_s is None


def test_vllm_chunk_steps_are_not_reduced_twice() -> None:
    # The first chunk carried 2 tokens; the chunks after it are the 3 verify steps (9 tokens):
    # accept 3.0, not the 3.4 of removing the first chunk's share again.
    chunks = (ProbeChunk(0.1, 2), ProbeChunk(0.2, 5), ProbeChunk(0.3, 8), ProbeChunk(0.4, 11))
    result = ProbeResult(0.0, chunks, 10, 3, None, "length", steps_source=StepsSource.CHUNKS)
    assert run_figures(result).accept_length == pytest.approx(3.0)
