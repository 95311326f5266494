"""The simulator's TensorRT-LLM shape against what `trtllm-serve`'s source says (no capture: the
Prometheus text against prometheus_client's own multiprocess collector run over the families of
`collector.py`), and specmon's reading of it against the ground truth of what it served."""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sim_helpers import PROMPT, StartSim, families, fast, sample_value, stream_chunks

from specmon.backend_facts import TRTLLM
from specmon.sim import SimConfig
from specmon.sources.backends import connect, trtllm

Client = Callable[..., httpx.AsyncClient]
MODEL = "tiny-llama"
STREAM_BODY = {
    "model": MODEL,
    "prompt": PROMPT,
    "max_tokens": 64,
    "temperature": 0,
    "ignore_eos": True,
    "stream": True,
    "stream_options": {"include_usage": True, "continuous_usage_stats": True},
}


def trtllm_sim(**changes: Any) -> SimConfig:
    """trtllm-serve with max_draft_len 4."""
    base: dict[str, Any] = {"backend": "trtllm", "served_model_name": MODEL}
    base |= {"speculative_algorithm": "EAGLE3", "speculative_num_draft_tokens": 5}
    return fast(**(base | {"accept_length": 2.5} | changes))


async def _prometheus(client: httpx.AsyncClient) -> str:
    response = await client.get("/prometheus/metrics")
    assert response.status_code == 200
    return response.text


# The families `collector.py` logs for one finished request and one iteration, made the way it
# makes them, rendered by prometheus_client's multiprocess collector (as trtllm-serve serves them).
MULTIPROCESS = textwrap.dedent(
    """
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
    from prometheus_client import multiprocess
    L = {"model_name": "undefined", "engine_type": "undefined"}
    P = {**L, "token_position": ""}
    R = {**L, "finished_reason": "unknown"}
    def c(name, labels=L): return Counter("trtllm_" + name, "d", labelnames=labels.keys())
    def g(name): return Gauge("trtllm_" + name, "d", labelnames=L.keys())
    def h(name): return Histogram("trtllm_" + name, "d", labelnames=L.keys())
    c("prompt_cached_tokens_total").labels(**L)
    c("request_success_total", R).labels(**L, finished_reason="length").inc()
    for name in ("prompt_tokens_total", "generation_tokens_total",
                 "spec_decode_num_draft_tokens_total", "spec_decode_num_accepted_tokens_total"):
        c(name).labels(**L).inc(3)
    for name in ("spec_decode_drafted_tokens_total", "spec_decode_accepted_tokens_total"):
        c(name, P).labels(**L, token_position=0).inc(2)
    for name in ("num_requests_running", "num_requests_waiting", "max_num_active_requests",
                 "iteration_latency_seconds", "kv_cache_utilization",
                 "spec_decode_acceptance_length", "spec_decode_draft_overhead"):
        g(name).labels(**L).set(1)
    for name in ("e2e_request_latency_seconds", "time_to_first_token_seconds",
                 "time_per_output_token_seconds", "request_queue_time_seconds",
                 "request_prefill_time_seconds", "request_decode_time_seconds",
                 "request_inference_time_seconds", "prompt_cached_tokens_per_request"):
        h(name).labels(**L).observe(0.5)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    print(generate_latest(registry).decode())
    """
)


@pytest.mark.slow
async def test_prometheus_text_is_the_multiprocess_collectors(
    start_sim: StartSim, client_for: Client, tmp_path: Path
) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    command = [sys.executable, "-c", MULTIPROCESS]
    run = functools.partial(subprocess.run, env=env, capture_output=True, text=True, check=True)
    real = (await asyncio.to_thread(run, command)).stdout
    sim = await start_sim(trtllm_sim())
    async with client_for(sim) as c:
        fresh = await _prometheus(c)
        await stream_chunks(c, STREAM_BODY, "/v1/completions")
        after = await _prometheus(c)
    ours, theirs = families(after), families(real)
    for name, keys in ours.items():  # the same samples' names and label keys
        assert theirs.get(name) == keys, name
    # Each moves with a finished request (the iteration counters only for a count above 0).
    assert set(theirs) - set(ours) <= {
        "trtllm_spec_decode_num_draft_tokens",
        "trtllm_spec_decode_num_accepted_tokens",
    }
    assert set(families(fresh)) == {"trtllm_prompt_cached_tokens"}  # the one child at startup
    for line in after.splitlines():  # label names sorted, as the multiprocess collector writes
        if "{" in line and not line.startswith("#"):
            keys = [pair.split("=")[0] for pair in line[line.index("{") + 1 :].split('",')]
            assert keys == sorted(keys), line


async def test_counters_match_what_was_served(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(trtllm_sim())
    async with client_for(sim) as c:
        await stream_chunks(c, STREAM_BODY, "/v1/completions")
        text = await _prometheus(c)
        metrics = trtllm.metrics_from_text(text)
    record = sim.emitted[-1]
    assert metrics.spec_drafts_total == record.verify_ct == len(record.step_accepted)
    assert metrics.spec_draft_tokens_total == 4 * record.verify_ct
    assert metrics.spec_accepted_tokens_total == sum(record.step_accepted)
    positions = tuple(float(sum(1 for a in record.step_accepted if a > i)) for i in range(4))
    assert metrics.spec_accepted_per_position == positions
    assert metrics.generation_tokens_total == record.completion_tokens == 64
    assert metrics.num_requests_total == 1
    # The iteration counters hold one iteration's figures: far fewer than the request's.
    drafted = sample_value(text, "trtllm_spec_decode_num_draft_tokens_total")
    assert 0 < drafted <= 4 < metrics.spec_draft_tokens_total


async def test_nothing_counts_before_a_request_finishes(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(trtllm_sim())
    async with client_for(sim) as c:
        metrics = trtllm.metrics_from_text(await _prometheus(c))
        info = await trtllm.fetch_server_info(c)
    assert metrics.generation_tokens_total is None and metrics.spec_drafts_total is None
    assert info.speculative is None  # shows with the first finished speculative request


async def test_stream_is_one_chunk_per_iteration(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(trtllm_sim())
    async with client_for(sim) as c:
        ours = await stream_chunks(c, STREAM_BODY, "/v1/completions")
    record = sim.emitted[-1]
    content = [chunk for chunk in ours if chunk["choices"]]
    assert len(content) == len(record.step_tokens)
    tokens = [chunk["usage"]["completion_tokens"] for chunk in content]
    assert tokens[0] == 1 and tokens[-1] == 64
    assert set(content[0]) == {"id", "object", "created", "model", "choices", "usage"}
    assert set(content[0]["choices"][0]) == {
        "index",
        "text",
        "token_ids",
        "logprobs",
        "finish_reason",
        "stop_reason",
        "avg_decoded_tokens_per_iter",
    }
    last = content[-1]["choices"][0]
    assert last["finish_reason"] == "length"
    assert last["avg_decoded_tokens_per_iter"] == pytest.approx(64 / len(record.step_tokens))
    assert ours[-1]["choices"] == [] and ours[-1]["usage"]["completion_tokens"] == 64
    assert ours[-1]["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}


async def test_a_completion_must_name_the_model(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(trtllm_sim())
    async with client_for(sim) as c:
        body = {k: v for k, v in STREAM_BODY.items() if k != "model"}
        response = await c.post("/v1/completions", json=body)
    assert response.status_code == 400 and "error" in response.json()


async def test_routes_of_trtllm_serve(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(trtllm_sim())
    async with client_for(sim) as c:
        assert (await c.get("/version")).json() == {"version": "1.4.0"}
        card = (await c.get("/v1/models")).json()["data"][0]
        assert set(card) == {"id", "object", "created", "owned_by"}
        assert card["owned_by"] == "tensorrt_llm" and card["id"] == MODEL
        assert (await c.get("/server_info")).json() == {"disaggregated_params": None}
        await stream_chunks(c, STREAM_BODY, "/v1/completions")
        stats = (await c.get("/metrics")).json()  # iteration stats, drained by the request's end
        assert isinstance(stats, list)
        assert (await c.get("/health")).status_code == 200


async def test_iteration_stats_are_drained(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(trtllm_sim())
    assert sim.state is not None and sim.state.trtllm is not None
    sim.state.trtllm.on_prefill_start([], 0.0, 0.01)  # one context iteration, queued
    async with client_for(sim) as c:
        first = (await c.get("/metrics")).json()
        second = (await c.get("/metrics")).json()
    assert [item["iter"] for item in first] == [1] and second == []
    assert {"iterLatencyMS", "numActiveRequests", "kvCacheStats"} <= set(first[0])
    assert set(first[0]["specDecodingStats"]) == {
        "numDraftTokens",
        "numAcceptedTokens",
        "numRequestsWithDraftTokens",
        "acceptanceLength",
        "iterLatencyMS",
        "draftOverhead",
    }


async def test_detected_as_trtllm_and_not_as_the_others(
    start_sim: StartSim, client_for: Client
) -> None:
    for config, name in (
        (trtllm_sim(), TRTLLM.name),
        (fast(), "sglang"),
        (fast(backend="vllm", speculative_algorithm="NGRAM"), "vllm"),
        (fast(backend="llamacpp", enable_metrics=True), "llamacpp"),
    ):
        sim = await start_sim(config)
        async with client_for(sim) as c:
            backend, info = await connect(c)
        assert backend.name == info.backend == name


async def test_probe_reads_the_requests_own_accept_length(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(trtllm_sim())
    async with client_for(sim) as c:
        await stream_chunks(c, STREAM_BODY, "/v1/completions")  # speculation shows
        result = await trtllm.run_probe(c, prompt=PROMPT, max_tokens=64)
    record = sim.emitted[-1]
    steps = len(record.step_tokens) - 1
    assert result.verify_ct == steps
    assert result.server_accept_length == pytest.approx(63 / steps)
    assert result.scrapes is not None


def test_accept_length_from_avg_decoded_tokens() -> None:
    chunk = (
        '{"choices":[{"index":0,"text":"x","finish_reason":"length",'
        '"avg_decoded_tokens_per_iter":2.5}],"usage":{"completion_tokens":10,"prompt_tokens":3}}'
    )
    update = trtllm.parse_chunk(chunk)
    # 10 tokens over 4 iterations: the context one and 3 verify steps making the other 9.
    assert update.accept_length == pytest.approx(3.0)
    assert update.finished and update.finish_reason == "length" and update.prompt_tokens == 3
    usage_only = trtllm.parse_chunk('{"choices":[],"usage":{"completion_tokens":10}}')
    assert usage_only.finished and usage_only.accept_length is None
