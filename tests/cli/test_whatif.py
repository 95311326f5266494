"""`specmon whatif` against simulators whose acceptance by position and cycle cost are known:
the predictions for other draft lengths are checked against benches of the simulator at those
lengths (within 3%), and against the model's own truth.

The simulator paces steps on absolute deadlines and draws acceptance from seeded generators, so
these figures do not depend on the machine's load; 4 runs of 600 tokens keep the draws' noise
in the accept length near 1%.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from specmon.cli import main
from specmon.sim import SimConfig, SimThread
from specmon.storage import saving
from specmon.storage.store import Store
from specmon.storage.unsaved import pending, read_unsaved
from tests.storage.test_saving import locked

RATES = (0.82, 0.64, 0.5, 0.38)  # a_i: the share of steps accepting draft position i
BASE_MS = 2.0
RUNS = ("--runs", "4", "--warmup", "1", "--max-tokens", "600")


def _config(k: int, cycle_ms: float, **changes: object) -> SimConfig:
    """A simulator at draft length k (k drafts + the root verified per step)."""
    config = SimConfig(
        plain_step_ms=BASE_MS,
        cycle_ms=cycle_ms,
        speculative_num_steps=k,
        speculative_num_draft_tokens=k + 1,
        accept_by_position=RATES[:k],
        ttft_ms=5.0,
        concurrency_slowdown=0.0,
        seed=11,
    )
    return replace(config, **changes)  # type: ignore[arg-type]


def _truth_tok_s(k: int, cycle_ms: float) -> float:
    """The simulator's own decode tok/s at draft length k: (1 + Σ_{i<k} a_i) per cycle."""
    return 1000 * (1 + sum(RATES[:k])) / cycle_ms


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


@pytest.fixture
def db(empty_db: str) -> str:
    """A store of the test's own: whatif reads a store before it saves, and makes none."""
    return empty_db


def _measure(config: SimConfig, db: str, capsys: pytest.CaptureFixture[str]) -> float:
    """Bench a simulator (saved in the store) and return its pooled decode tok/s."""
    with SimThread(config) as sim:
        body = _json(capsys, "bench", sim.url, *RUNS, "--db", db)
    return float(body["pooled"]["decode_tok_s"])


@pytest.mark.slow
def test_eagle_chain_predicts_shorter_and_longer_drafts_within_3_percent(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A draft model: T(k) = T₀ + 0.75 ms per draft, one cycle measured (at k = 3)."""

    def cycle(k: int) -> float:
        return BASE_MS + 0.75 * k

    with ExitStack() as stack:
        plain = stack.enter_context(SimThread(_config(3, 1.0, speculative_algorithm=None)))
        _json(capsys, "bench", plain.url, *RUNS, "--db", db)
        spec = stack.enter_context(SimThread(_config(3, cycle(3))))
        body = _json(capsys, "whatif", spec.url, *RUNS, "--db", db)
    by_k = {p["draft_tokens"]: p for p in body["predictions"]}
    assert sorted(by_k) == [1, 2, 3, 4, 5]
    assert body["cycle_model"]["fit"] == "per_draft"
    assert body["acceptance_source"] == "histogram"
    # 4 × 600 tokens are ~700 steps: a_i within two binomial standard errors (0.04).
    assert body["acceptance_by_position"] == pytest.approx(RATES[:3], abs=0.05)
    base = BASE_MS
    for k in (1, 2, 3):
        p = by_k[k]
        assert p["cycle_ms"] == pytest.approx(cycle(k), rel=0.03)
        # Against the model's truth, the draws' noise comes on top (the runs' a_i above).
        assert p["decode_tok_s"] == pytest.approx(_truth_tok_s(k, cycle(k)), rel=0.05)
        # The speedup is the decode shown over the baseline's, and break-even is T(k)/T₀.
        assert p["speedup"] == pytest.approx(p["decode_tok_s"] * base / 1000 - 1, rel=0.02)
        assert p["break_even_accept_length"] == pytest.approx(p["cycle_ms"] / base, rel=0.02)
    for k in (1, 2):
        measured = _measure(_config(k, cycle(k)), db, capsys)
        assert by_k[k]["decode_tok_s"] == pytest.approx(measured, rel=0.03), k
    measured = _measure(_config(4, cycle(4), accept_by_position=RATES), db, capsys)
    assert by_k[4]["extrapolated"] is True
    # Past the measured positions acceptance is extrapolated: the interval must hold the truth.
    assert by_k[4]["decode_tok_s_low"] <= measured <= by_k[4]["decode_tok_s_high"]


@pytest.mark.slow
def test_fixed_overhead_is_fitted_from_an_earlier_snapshot_at_another_length(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """T(k) = T₀ + 1.5 ms + 0.5 ms per draft: the one-cycle assumption would miss the 1.5 ms;
    an earlier bench at k = 1 gives the line."""

    def cycle(k: int) -> float:
        return BASE_MS + 1.5 + 0.5 * k

    with SimThread(_config(1, 1.0, speculative_algorithm=None)) as plain:
        _json(capsys, "bench", plain.url, *RUNS, "--db", db)
        _measure(_config(1, cycle(1)), db, capsys)
        with SimThread(_config(4, cycle(4), accept_by_position=RATES)) as spec:
            body = _json(capsys, "whatif", spec.url, *RUNS, "--db", db)
    model = body["cycle_model"]
    assert model["fit"] == "line"
    assert sorted(p["draft_tokens"] for p in model["points"]) == [1, 4]
    assert model["alpha_ms"] == pytest.approx(BASE_MS + 1.5, rel=0.03)
    by_k = {p["draft_tokens"]: p for p in body["predictions"]}
    for k in (2, 3):
        measured = _measure(_config(k, cycle(k)), db, capsys)
        assert by_k[k]["decode_tok_s"] == pytest.approx(measured, rel=0.03), k
        assert by_k[k]["decode_tok_s"] == pytest.approx(_truth_tok_s(k, cycle(k)), rel=0.05)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["vllm", "llamacpp"])
def test_per_position_counters_of_the_vllm_and_llamacpp_shapes(
    backend: str, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Their acceptance by position comes from `spec_decode_num_accepted_tokens_per_pos`."""
    config = _config(4, 5.0, backend=backend, accept_by_position=RATES)
    with SimThread(replace(config, speculative_algorithm=None)) as plain:
        _json(capsys, "bench", plain.url, *RUNS, "--db", db)
    with SimThread(config) as sim:
        body = _json(capsys, "whatif", sim.url, *RUNS, "--db", db)
    assert body["acceptance_source"] == "counters"
    assert body["acceptance_by_position"] == pytest.approx(RATES, abs=0.05)
    assert body["baseline"] is not None
    assert body["cycle_model"]["fit"] == "per_draft"  # a draft model, one cycle, the baseline
    assert all(p["speedup"] is not None for p in body["predictions"])


@pytest.mark.slow
def test_a_draft_model_without_a_baseline_is_never_taken_as_free(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """One cycle and no baseline: the fixed-cost assumption would make longer drafts free for
    a draft model (EAGLE3 once picked k = 4 so); other lengths are not ranked, and it says so."""
    with SimThread(_config(3, BASE_MS + 0.75 * 3)) as sim:
        code = main(["whatif", sim.url, *RUNS, "--db", db])
    out = capsys.readouterr().out
    assert code == 1
    assert "other draft lengths are not ranked: one cycle measured with a draft model" in out
    assert "bench the server without speculation" in out


def test_tree_drafts_are_refused_with_the_reason(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SimThread(
        _config(
            3,
            10.0,
            speculative_eagle_topk=4,
            speculative_num_draft_tokens=8,
            accept_by_position=None,
            accept_length=2.5,
        )
    ) as sim:
        code = main(["whatif", sim.url, "--runs", "1", "--max-tokens", "50", "--db", db])
    out = capsys.readouterr().out
    assert code == 1
    assert "no prediction: EAGLE topk 4 drafts a tree" in out


def test_a_server_without_speculation_gets_no_prediction(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SimThread(_config(2, 1.0, speculative_algorithm=None)) as sim:
        code = main(["whatif", sim.url, "--db", db, "--json"])
    body = json.loads(capsys.readouterr().out)
    assert code == 1
    assert next(iter(body.items())) == ("schema", 2)  # first, as in the other --json outputs
    assert body["predictions"] == [] and body["snapshot_id"] is None  # nothing benched
    assert body["reason"] == "speculation is off: nothing to predict"


@pytest.mark.slow
def test_a_baseline_protocol_set_over_max_tokens_is_said(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The baseline's token count wins over --max-tokens, as in `check`, and it is said: the
    bench ran the baseline's 40 tokens a run while --max-tokens 24 was given, without a word."""
    short = ("--runs", "2", "--warmup", "0")
    with ExitStack() as stack:
        plain = stack.enter_context(SimThread(_config(2, 1.0, speculative_algorithm=None)))
        _json(capsys, "bench", plain.url, *short, "--max-tokens", "40", "--db", db)
        spec = stack.enter_context(SimThread(_config(2, 3.5)))
        asked = main(["whatif", spec.url, *short, "--max-tokens", "24", "--db", db])
        said = capsys.readouterr().out
        assert main(["whatif", spec.url, *short, "--db", db]) == asked == 0
        unasked = capsys.readouterr().out
    assert "bench: 40 tokens a run, the protocol of baseline #1 (--max-tokens 24 set aside" in (
        said
    )
    assert "set aside" not in unasked  # not given: the baseline's protocol without a word


def test_a_bench_the_store_cannot_take_is_kept_not_lost(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """whatif saves its bench as `bench` does (`save_or_keep`): a store another process keeps
    locked past the wait leaves the bench in a file to import, said, exit 1; it was dropped."""
    Store(Path(db)).close()  # made, then locked by another process
    monkeypatch.setattr(saving, "DEFAULT_PATIENCE_S", 0.2)
    monkeypatch.setattr(saving, "ATTEMPT_S", 0.05)
    with SimThread(_config(2, 4.0)) as sim, locked(Path(db)):
        code = main(["whatif", sim.url, "--runs", "2", "--warmup", "0", "--max-tokens", "64",
                     "--db", db])  # fmt: skip
    out = capsys.readouterr()
    assert code == 1, out.err
    assert "(measured now, not saved)" in out.out
    assert "stayed locked by another process" in out.err and "snapshots import" in out.err
    (kept,) = pending()
    assert read_unsaved(kept).snapshots[0].server.speculative is not None
