"""`specmon bench` and `check` against the simulator speaking vLLM, llama.cpp and TensorRT-LLM,
held against what it served (its ground-truth record), within 1%."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specmon.cli import main
from specmon.sim import EmittedRequest, SimConfig, SimThread

pytestmark = pytest.mark.slow  # benches against the simulator: ~2 s a test

# 20 ms cycles: long enough that a loaded machine's scheduling jitter stays well inside 1%.
COMMON: dict[str, Any] = {"plain_step_ms": 10.0, "cycle_ms": 20.0, "ttft_ms": 10.0, "seed": 7}
COMMON |= {"accept_length": 2.6, "speculative_num_draft_tokens": 5, "enable_metrics": True}
KINDS = ("vllm", "llamacpp", "trtllm")
CONFIGS = [SimConfig(backend=kind, **COMMON) for kind in KINDS]
SOURCES = {"vllm": "counters", "llamacpp": "timings", "trtllm": "chunks"}


@pytest.fixture
def sim(request: pytest.FixtureRequest) -> Iterator[SimThread]:
    with SimThread(request.param) as thread:
        yield thread


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out)


def _truth(record: EmittedRequest) -> dict[str, float]:
    """A run's figures from what the simulator did and when it sent each step's output."""
    c, t = record.chunk_completion_tokens, record.chunk_send_mono
    steps = len(record.step_tokens) - 1  # every decode step after the prefill's token
    return {
        "decode_tok_s": (c[-1] - c[0]) / (t[-1] - t[0]),
        "accept_length": (c[-1] - c[0]) / steps,
        "cycle_ms": 1000 * (t[-1] - t[0]) / steps,
        "steps": steps,
        "server_accept": 1 + sum(record.step_accepted) / len(record.step_accepted),
        # TensorRT-LLM's: the request's generated tokens over its iterations, the context one
        # included (`avg_decoded_tokens_per_iter`), turned into tokens per verify step.
        "server_generated": (c[-1] - 1) / steps,
    }


@pytest.mark.parametrize("sim", CONFIGS, indirect=True, ids=KINDS)
def test_bench_matches_what_was_served(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = sim.server.config.backend
    code, body = _json(
        capsys,
        "bench",
        sim.url,
        "--runs",
        "3",
        "--warmup",
        "1",
        "--max-tokens",
        "120",
        "--db",
        str(tmp_path / "s.db"),
    )
    assert code == 0
    assert body["target"]["backend"] == backend
    assert body["target"]["speculative"] is not None  # TensorRT-LLM's shows after a request
    timed = sim.server.emitted[-3:]
    for run, record in zip(body["runs"], timed, strict=True):
        truth = _truth(record)
        assert run["completion_tokens"] == 120
        assert run["verify_ct"] == truth["steps"]
        for figure in ("decode_tok_s", "accept_length", "cycle_ms"):
            assert run[figure] == pytest.approx(truth[figure], rel=0.01), figure
        # The server's own 1 + Δaccepted/Δdrafts over the run (the probe ran alone), or
        # TensorRT-LLM's per-request figure.
        server = truth["server_generated" if backend == "trtllm" else "server_accept"]
        assert run["server_accept_length"] == pytest.approx(server)
        assert run["cycle_source"] == SOURCES[backend]
        assert (run["cycle_ms_p50"] is None) == (backend == "llamacpp")


@pytest.mark.parametrize("sim", CONFIGS, indirect=True, ids=KINDS)
def test_check_is_healthy(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, body = _json(capsys, "check", sim.url, "--probe-tokens", "60", "--db", empty_db)
    assert code == 0, body["findings"]
    assert body["server"]["backend"] == sim.server.config.backend
    assert body["probe"]["cycle_source"] == SOURCES[sim.server.config.backend]
