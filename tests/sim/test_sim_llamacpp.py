"""The simulator's llama.cpp shape against the real `llama-server` capture (build b1-0c1e570),
and its counters against the ground truth of what it served."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sim_helpers import PROMPT, StartSim, fast, sse_lines

from specmon.sim import SimConfig
from specmon.sim.__main__ import speculation_said
from specmon.sim.config import LLAMACPP_SPECULATIVE_TYPE
from specmon.sources.backends import llamacpp

Client = Callable[..., httpx.AsyncClient]
REAL = Path(__file__).parent.parent / "fixtures" / "llamacpp-cpu"
BODY = {"prompt": PROMPT, "n_predict": 64, "temperature": 0, "ignore_eos": True, "stream": True}


def llama_sim(**changes: Any) -> SimConfig:
    """llama-server with at most 4 drafts per step and `--metrics`."""
    base: dict[str, Any] = {"backend": "llamacpp", "served_model_name": "tiny-llama"}
    base |= {"speculative_num_draft_tokens": 5, "accept_length": 2.5, "enable_metrics": True}
    return fast(**(base | changes))


def _real_chunks() -> list[dict[str, Any]]:
    lines = json.loads((REAL / "probe_stream.json").read_text())["lines"]
    return [json.loads(x["line"][6:]) for x in lines if x["line"].startswith("data: {")]


async def _stream(client: httpx.AsyncClient) -> tuple[list[str], list[dict[str, Any]]]:
    lines = await sse_lines(client, "/completion", BODY)
    return lines, [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def _help_lines(text: str) -> set[str]:
    return {line for line in text.splitlines() if line.startswith("#")}


async def test_metrics_text_is_llamacpps(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(llama_sim())
    async with client_for(sim) as c:
        fresh = (await c.get("/metrics")).text
        await _stream(c)
        after = (await c.get("/metrics")).text
    # The same families, help and types, in the same order; no labels but the position.
    assert fresh.splitlines()[::3] == (REAL / "metrics_before").read_text().splitlines()[::3]
    assert _help_lines(after) == _help_lines((REAL / "metrics_after").read_text())
    assert "per_pos" not in fresh  # written at the first draft, as the real server does
    assert 'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="3"}' in after


async def test_counters_match_what_was_served(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(llama_sim())
    async with client_for(sim) as c:
        _, chunks = await _stream(c)
        metrics = llamacpp.metrics_from_text((await c.get("/metrics")).text)
    record, timings = sim.emitted[-1], chunks[-1]["timings"]
    assert metrics.generation_tokens_total == timings["predicted_n"] == 64
    assert metrics.spec_drafts_total == record.verify_ct == len(record.step_drafted)
    assert metrics.spec_draft_tokens_total == sum(record.step_drafted) == timings["draft_n"]
    assert metrics.spec_accepted_tokens_total == sum(record.step_accepted)
    assert metrics.spec_accepted_tokens_total == timings["draft_n_accepted"]
    assert metrics.decode_seconds_total is not None
    # printed with 6 significant digits, as C++ streams print doubles
    assert 1000 * metrics.decode_seconds_total == pytest.approx(timings["predicted_ms"], rel=1e-5)
    # Drafts are cut to the tokens left, so no accepted token falls past the limit and the
    # steps after the first token are exactly predicted_n − 1 − draft_n_accepted.
    assert 64 - 1 - timings["draft_n_accepted"] == len(record.step_tokens) - 1


async def test_stream_is_one_chunk_per_token(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(llama_sim())
    async with client_for(sim) as c:
        lines, chunks = await _stream(c)
    assert lines[-1] != "data: [DONE]"  # the native stream has no [DONE]
    tokens = [chunk for chunk in chunks if not chunk["stop"]]
    assert [chunk["tokens_predicted"] for chunk in tokens] == list(range(1, 65))
    assert len(sim.emitted[-1].step_tokens) < 64  # several tokens per step, one chunk each
    real = _real_chunks()
    assert set(tokens[0]) == set(real[1])
    assert set(chunks[-1]) <= set(real[-1])
    assert set(chunks[-1]["timings"]) == set(real[-1]["timings"])


async def test_slots_show_their_types_once_they_served(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(llama_sim())
    async with client_for(sim) as c:
        before = await llamacpp.fetch_server_info(c)
        await _stream(c)
        after = await llamacpp.fetch_server_info(c)
    assert before.speculative is not None and before.speculative.algorithm == "draft"
    assert after.speculative is not None
    assert (after.speculative.algorithm, after.speculative.num_steps) == ("draft-simple", 4)
    assert before.args == after.args  # a served request is not a restart


async def test_metrics_off_and_api_key(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(llama_sim(enable_metrics=False, api_key="sk-sim"))
    auth = {"Authorization": "Bearer sk-sim"}
    async with client_for(sim) as c:
        assert (await c.get("/health")).status_code == 200
        assert (await c.get("/props")).status_code == 401
        props = (await c.get("/props", headers=auth)).json()
        assert props["endpoint_metrics"] is False
        assert (await c.get("/metrics", headers=auth)).status_code == 501


def test_the_start_up_line_names_the_speculation_llamacpp_reports() -> None:
    # It said "(speculation EAGLE3)" while the dashboard showed the server's own draft-simple.
    assert speculation_said(SimConfig(backend="llamacpp")) == LLAMACPP_SPECULATIVE_TYPE
    assert speculation_said(SimConfig()) == "EAGLE3"
    assert speculation_said(SimConfig(backend="llamacpp", speculative_algorithm=None)) == "off"
