"""`specmon bench --json` against the simulator in every SGLang shape, checked against what the
simulator actually emitted (its ground-truth record), within 1%.

Runs are 300 tokens (about a second): long enough that the client's scheduling jitter on a busy
2-core machine stays well inside 1% of a run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from specmon.cli import main
from specmon.sim import EmittedRequest, SimConfig, SimThread

pytestmark = pytest.mark.slow  # benches against the simulator: ~3.7 s a test

FAST = SimConfig(plain_step_ms=4.0, cycle_ms=8.0, accept_length=2.1, ttft_ms=10.0, seed=7)
PLAIN = replace(FAST, speculative_algorithm=None)  # the simulator drops the other spec args
VERSIONS = ("0.4.6", "0.5.4", "0.5.17", "0.5.23")


@pytest.fixture
def sim(request: pytest.FixtureRequest) -> Iterator[SimThread]:
    with SimThread(request.param) as thread:
        yield thread


def _bench(url: str, db: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    code = main(
        [
            "bench",
            url,
            "--runs",
            "2",
            "--warmup",
            "1",
            "--max-tokens",
            "300",
            "--json",
            "--db",
            str(db),
            *extra,
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def _truth(record: EmittedRequest) -> dict[str, float | None]:
    """The figures as the server emitted them, from its own send times."""
    c = record.chunk_completion_tokens
    t = record.chunk_send_mono
    first = 0
    decode_tokens = c[-1] - c[first]
    return {
        "completion_tokens": record.completion_tokens,
        "decode_tok_s": decode_tokens / (t[-1] - t[first]),
        "accept_length": decode_tokens / record.verify_ct if record.verify_ct else None,
        "cycle_ms": 1000 * (t[-1] - t[first]) / record.verify_ct if record.verify_ct else None,
    }


def _check_runs(body: dict, emitted: list[EmittedRequest]) -> None:
    timed = emitted[-len(body["runs"]) :]  # the warm-up run came first
    for run, record in zip(body["runs"], timed, strict=True):
        truth = _truth(record)
        assert run["completion_tokens"] == truth["completion_tokens"] == 300
        assert run["decode_tok_s"] == pytest.approx(truth["decode_tok_s"], rel=0.01)
        if truth["accept_length"] is None:
            assert run["accept_length"] is None and run["cycle_ms"] is None
        else:
            assert run["accept_length"] == pytest.approx(truth["accept_length"], rel=0.01)
            assert run["cycle_ms"] == pytest.approx(truth["cycle_ms"], rel=0.01)
            assert run["verify_ct"] == record.verify_ct


@pytest.mark.parametrize(
    "sim", [replace(FAST, version=v) for v in VERSIONS], indirect=True, ids=VERSIONS
)
def test_speculative_bench_matches_emitted(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = _bench(sim.url, tmp_path / "s.db", capsys)
    assert body["schema"] == 1
    assert body["target"]["version"] == sim.server.config.version
    assert body["target"]["speculative"] == {
        "algorithm": "EAGLE3",
        "num_steps": 2,
        "eagle_topk": 1,
        "num_draft_tokens": 3,
    }
    _check_runs(body, sim.server.emitted)
    assert body["summary"]["accept_length"]["median"] == pytest.approx(2.1, rel=0.15)
    assert body["snapshot_id"] == 1


@pytest.mark.parametrize(
    "sim", [replace(PLAIN, version=v) for v in VERSIONS], indirect=True, ids=VERSIONS
)
def test_plain_bench_matches_emitted(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = _bench(sim.url, tmp_path / "p.db", capsys)
    assert body["target"]["speculative"] is None
    assert body["summary"]["accept_length"] is None and body["summary"]["cycle_ms"] is None
    _check_runs(body, sim.server.emitted)
    assert body["summary"]["decode_tok_s"]["median"] == pytest.approx(250, rel=0.02)


@pytest.mark.parametrize(
    "sim", [replace(FAST, enable_metrics=False, api_key="sk-test-123")], indirect=True
)
def test_metrics_off_and_api_key(
    sim: SimThread,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPECMON_API_KEY", "sk-test-123")
    body = _bench(sim.url, tmp_path / "k.db", capsys)
    _check_runs(body, sim.server.emitted)
    for written in tmp_path.iterdir():  # the store and its WAL and shared-memory files
        assert b"sk-test-123" not in written.read_bytes()
    assert "sk-test-123" not in json.dumps(body)
