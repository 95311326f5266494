"""The simulator's vLLM shape against the real vLLM 0.32.0 capture, and its counters against
the ground truth of what it served."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from sim_helpers import PROMPT, StartSim, fast, sample_value, stream_chunks

from specmon.sim import SimConfig
from specmon.sources.backends import vllm

Client = Callable[..., httpx.AsyncClient]
REAL = Path(__file__).parent.parent / "fixtures" / "vllm-0.32.0-cpu"
STREAM_BODY = {
    "prompt": PROMPT,
    "max_tokens": 64,
    "temperature": 0,
    "ignore_eos": True,
    "stream": True,
    "stream_options": {"include_usage": True, "continuous_usage_stats": True},
}


def vllm_sim(**changes: Any) -> SimConfig:
    """vLLM with 4 draft tokens per step (as the real server's n-gram setup)."""
    base: dict[str, Any] = {"backend": "vllm", "served_model_name": "tiny-llama"}
    base |= {"speculative_algorithm": "NGRAM", "speculative_num_draft_tokens": 5}
    return fast(**(base | {"accept_length": 2.5} | changes))


def _families(text: str) -> dict[str, tuple[str, frozenset[tuple[str, ...]]]]:
    """Family -> (type, label-key sets of its samples), as prometheus_client reads them."""
    return {
        f.name: (
            f.type,
            frozenset(tuple(sorted(k for k in s.labels if k != "le")) for s in f.samples),
        )
        for f in text_string_to_metric_families(text)
    }


async def _metrics(client: httpx.AsyncClient) -> str:
    return (await client.get("/metrics")).text


async def test_metrics_families_are_vllms(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(vllm_sim())
    async with client_for(sim) as c:
        fresh = await _metrics(c)
        await stream_chunks(c, STREAM_BODY, "/v1/completions")
        after = await _metrics(c)
    real = _families((REAL / "metrics_after").read_text())
    ours = _families(after)
    for name, shape in ours.items():
        assert real.get(name) == shape, name  # same type and labels as the real server's
    read = {"vllm:generation_tokens", "vllm:request_success", "vllm:spec_decode_num_drafts"}
    read |= {"vllm:spec_decode_num_accepted_tokens_per_pos", "vllm:time_to_first_token_seconds"}
    assert read <= set(ours)
    # Like the real server, every series exists at 0 before the first request.
    assert _families(fresh) == ours
    assert sample_value(fresh, "vllm:spec_decode_num_accepted_tokens_per_pos_total") == 0


async def test_plain_server_has_no_spec_families(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(vllm_sim(speculative_algorithm=None))
    async with client_for(sim) as c:
        text = await _metrics(c)
        info = await vllm.fetch_server_info(c)
    assert "spec_decode" not in text and info.speculative is None


async def test_counters_match_what_was_served(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(vllm_sim())
    async with client_for(sim) as c:
        await stream_chunks(c, STREAM_BODY, "/v1/completions")
        metrics = vllm.metrics_from_text(await _metrics(c))
    record = sim.emitted[-1]
    assert metrics.spec_drafts_total == record.verify_ct == len(record.step_accepted)
    assert metrics.spec_draft_tokens_total == 4 * record.verify_ct
    # Accepted as verified, even past max_tokens (the real server counts them too).
    assert metrics.spec_accepted_tokens_total == sum(record.step_accepted)
    positions = [sum(1 for a in record.step_accepted if a > i) for i in range(4)]
    assert metrics.spec_accepted_per_position == tuple(positions)
    assert metrics.generation_tokens_total == record.completion_tokens == 64
    assert metrics.num_requests_total == 1


async def test_stream_is_one_chunk_per_step(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(vllm_sim())
    async with client_for(sim) as c:
        ours = await stream_chunks(c, STREAM_BODY, "/v1/completions")
    record = sim.emitted[-1]
    content = [chunk for chunk in ours if chunk["choices"]]
    assert len(content) == len(record.step_tokens)  # the prefill's token, then one per step
    tokens = [chunk["usage"]["completion_tokens"] for chunk in content]
    assert tokens[0] == 1 and tokens[-1] == 64
    assert [b - a for a, b in zip([0, *tokens], tokens, strict=False)] == record.step_tokens
    assert content[-1]["choices"][0]["finish_reason"] == "length"
    assert ours[-1]["choices"] == [] and ours[-1]["usage"]["completion_tokens"] == 64


async def test_chunks_have_the_real_keys(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(vllm_sim())
    async with client_for(sim) as c:
        ours = await stream_chunks(c, STREAM_BODY, "/v1/completions")
    real = [
        json.loads(line["line"][6:])
        for line in json.loads((REAL / "probe_stream.json").read_text())["lines"]
        if line["line"].startswith("data: {")
    ]
    for mine, theirs in ((ours[0], real[0]), (ours[-2], real[-2]), (ours[-1], real[-1])):
        assert set(mine) == set(theirs)
        if theirs["choices"]:
            assert set(mine["choices"][0]) == set(theirs["choices"][0])
        assert set(mine["usage"]) == set(theirs["usage"])


async def test_api_key_guards_only_v1(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(vllm_sim(api_key="sk-sim"))
    async with client_for(sim) as c:
        assert (await c.get("/version")).status_code == 200
        assert (await c.get("/metrics")).status_code == 200
        assert (await c.get("/v1/models")).status_code == 401
        assert (await c.get("/v1/models", headers={"Authorization": "Bearer sk-sim"})).is_success
