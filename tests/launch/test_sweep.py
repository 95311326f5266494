"""`ab --sweep`: the configurations tried, those skipped as SGLang would treat them, and a sweep
run against the simulator with the best configuration per concurrency."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest
from ab_helpers import Launched, free_port

from specmon.analysis.ab_runs import Side, configs, judged
from specmon.analysis.load import best_per_concurrency
from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.errors import TargetError
from specmon.launch.ab import AbPlan, run_ab, target_for
from specmon.launch.split import ServerKind, split_command
from specmon.launch.sweep import parse_axes, variants
from specmon.model import Protocol
from specmon.target import Target

T0 = 1_750_000_000.0
SGL = ["python", "-m", "sglang.launch_server", "--model-path", "m"]


def test_sglang_eagle_combinations_skipped_as_sglang_would() -> None:
    split = split_command(
        [
            *SGL,
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-num-steps",
            "2",
            "--speculative-eagle-topk",
            "1",
        ],
        {},
    )
    axes = parse_axes(["draft-tokens=3,4", "steps=2", "topk=1,2"], ServerKind.SGLANG)
    found, skipped = variants(split, axes)
    assert [v.label for v in found] == [
        "draft-tokens=3 steps=2 topk=1",
        "draft-tokens=3 steps=2 topk=2",
        "draft-tokens=4 steps=2 topk=2",
    ]
    assert skipped == [
        "draft-tokens=4 steps=2 topk=1: SGLang sets draft tokens to steps + 1 (3) with topk 1 "
        "(sweep draft-tokens without steps, and specmon sets steps = draft-tokens - 1)"
    ]
    argv = found[2].launch.argv
    assert argv[argv.index("--speculative-eagle-topk") + 1] == "2"  # replaced in place
    assert argv[argv.index("--speculative-num-draft-tokens") + 1] == "4"  # added
    assert argv.count("--speculative-eagle-topk") == 1


def test_a_chain_sweeps_its_draft_tokens_with_the_steps_to_match() -> None:
    # The README's sweep on its topk-1 command: SGLang would overrule any draft tokens but
    # steps + 1, so each draft length launches with the steps that give it.
    split = split_command(
        [
            *SGL,
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-num-steps",
            "2",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "3",
        ],
        {},
    )
    found, skipped = variants(split, parse_axes(["draft-tokens=2,4,8"], ServerKind.SGLANG))
    assert skipped == []
    assert [v.label for v in found] == [
        "draft-tokens=2 steps=1",
        "draft-tokens=4 steps=3",
        "draft-tokens=8 steps=7",
    ]
    argv = found[2].launch.argv
    assert argv[argv.index("--speculative-num-steps") + 1] == "7"
    assert argv[argv.index("--speculative-num-draft-tokens") + 1] == "8"


def test_ngram_sweeps_draft_tokens_only() -> None:
    split = split_command(
        [*SGL, "--speculative-algorithm=NGRAM", "--speculative-num-draft-tokens=4"], {}
    )
    found, skipped = variants(split, parse_axes(["draft-tokens=1,2,8"], ServerKind.SGLANG))
    assert [v.label for v in found] == ["draft-tokens=2", "draft-tokens=8"]
    assert skipped[0].startswith("draft-tokens=1: a verify step needs at least 2")
    assert "--speculative-num-draft-tokens" in found[1].launch.argv
    assert "--speculative-num-draft-tokens=4" not in found[1].launch.argv
    with pytest.raises(TargetError, match="NGRAM derives steps and topk"):
        variants(split, {"steps": (1, 2)})


def test_vllm_and_llamacpp_axes() -> None:
    vllm = split_command(
        [
            "vllm",
            "serve",
            "m",
            "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": 4}',
        ],
        {},
    )
    found, _ = variants(vllm, parse_axes(["tokens=2"], ServerKind.VLLM))
    config = json.loads(found[0].launch.argv[-1])
    assert config == {"method": "ngram", "num_speculative_tokens": 2}
    llama = split_command(["llama-server", "-m", "t", "-md", "d", "--spec-draft-n-max", "4"], {})
    found, _ = variants(llama, parse_axes(["draft-max=8"], ServerKind.LLAMACPP))
    assert found[0].launch.argv == (
        "llama-server",
        "-m",
        "t",
        "-md",
        "d",
        "--spec-draft-n-max",
        "8",
    )
    with pytest.raises(TargetError, match="vllm sweeps tokens"):
        parse_axes(["draft-max=2"], ServerKind.VLLM)
    with pytest.raises(TargetError, match="positive integers"):
        parse_axes(["tokens=0,x"], ServerKind.VLLM)


@pytest.mark.slow
async def test_a_40_minute_sweep_against_the_simulator_names_the_best_per_concurrency(
    tmp_path: Path,
) -> None:
    split = split_command(
        [
            sys.executable,
            "-m",
            "specmon.sim",
            "--plain-step-ms",
            "6",
            "--cycle-ms",
            "9",
            "--ttft-ms",
            "5",
            "--accept-length",
            "1.8",
            "--speculative-algorithm",
            "NGRAM",
            "--port",
            str(free_port()),
        ],
        {},
    )
    found, _ = variants(split, parse_axes(["draft-tokens=2,4"], ServerKind.SIM))
    launched = Launched()
    plan = AbPlan(
        split,
        target_for(split, Target("http://127.0.0.1")),
        Protocol(3, 1, 48, 0.0, "Count."),
        (1, 2),
        rounds=2,
        health_timeout_s=60,
        logs=tmp_path,
        variants=tuple(found),
    )
    # A large model's pace: each bench ends 4 min after the last, 44 min from first to last.
    bench_ends = itertools.count(T0, 4 * 60)
    runs = await run_ab(plan, launched.events(), wall=lambda: next(bench_ends))
    launched.assert_none_left()
    assert len(launched.servers) == 6  # each round: one baseline, then each configuration
    assert runs[-1].snapshot.created_at - runs[0].snapshot.created_at == 44 * 60
    assert configs(runs) == ["draft-tokens=2", "draft-tokens=4"]
    assert sum(r.side == Side.BASELINE for r in runs) == 4  # one bench per concurrency, round
    per_config = [(c or "", found) for c, found, _ in judged(runs, max_age_s=DEFAULT_MAX_AGE_S)]
    assert [c for c, _ in per_config] == ["draft-tokens=2", "draft-tokens=4"]
    for _, found_levels in per_config:
        assert all(lv.valid for lv in found_levels)  # each round judged at its own time
    best = best_per_concurrency(per_config)
    assert [b.concurrency for b in best] == [1, 2]
    for b in best:
        others = [lv for _, lvs in per_config for lv in lvs if lv.concurrency == b.concurrency]
        top = max(lv.comparison.speedup.value for lv in others if lv.comparison)
        assert b.level.comparison is not None and b.level.comparison.speedup.value == top
    assert runs[0].config is None  # the baseline carries no config
