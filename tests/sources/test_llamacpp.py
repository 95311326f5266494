"""The llama.cpp backend on real `llama-server` answers (tests/fixtures/llamacpp-cpu, build
b1-0c1e570): metrics, server info, detection, and the native probe replayed with its timing."""

from __future__ import annotations

import json

import httpx
import pytest
from backend_replay import FIXTURES, capture, server_transport
from replay import FakeClock

from specmon.analysis.figures import run_figures
from specmon.errors import MetricsDisabled, NotLlamaCpp
from specmon.model import ProbeResult, ServerInfo, ServerMetrics, SpecConfig
from specmon.sources.backends import connect, llamacpp

FOLDER = "llamacpp-cpu"
ROUTES: dict[str, str | int] = {"/props": "props", "/slots": "slots", "/v1/models": "v1_models"}


def _metrics(name: str) -> ServerMetrics:
    return llamacpp.metrics_from_text((FIXTURES / FOLDER / name).read_text())


def test_metrics_of_a_real_scrape() -> None:
    m = _metrics("metrics_after_concurrent")  # one stream plus six concurrent ones
    assert m.generation_tokens_total == 896  # tokens_predicted_total
    assert (m.spec_drafts_total, m.spec_draft_tokens_total) == (252, 1008)
    assert m.spec_accepted_tokens_total == 637
    assert m.spec_accepted_per_position == (196, 154, 147, 140)
    assert m.decode_seconds_total == pytest.approx(12.3011)
    assert m.num_requests_total is None  # llama.cpp counts no requests: unknown, not zero
    assert m.num_running_reqs == 0


def test_a_fresh_server_has_no_per_position_family() -> None:
    m = _metrics("metrics_before")
    assert (m.generation_tokens_total, m.spec_drafts_total) == (0, 0)
    assert m.spec_accepted_per_position is None


async def _info(routes: dict[str, str | int]) -> ServerInfo:
    transport = server_transport(
        FOLDER, routes, stream_path=llamacpp.COMPLETION, metrics=("metrics_after",)
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://llama") as client:
        return await llamacpp.fetch_server_info(client)


async def test_server_info() -> None:
    info = await _info(ROUTES)
    assert (info.backend, info.version, info.model) == ("llamacpp", "b1-0c1e570", "tiny-llama")
    assert info.title == "llama.cpp b1-0c1e570"
    # A served slot names the types; the counters, the draft length (one series per position).
    assert info.speculative == SpecConfig("draft-simple", 4, None, None)
    assert info.metrics_enabled is True
    assert info.args == {
        "model_path": info.args["model_path"],
        "model_alias": "tiny-llama",
        "model_ftype": "all F32",
        "total_slots": 4,
        "n_ctx": 512,
    }


async def test_server_info_without_slots() -> None:
    info = await _info({**ROUTES, "/slots": 501})
    assert info.speculative == SpecConfig("draft", 4, None, None)  # from the counters alone


async def test_detected_as_llamacpp() -> None:
    transport = server_transport(FOLDER, ROUTES, stream_path=llamacpp.COMPLETION)
    async with httpx.AsyncClient(transport=transport, base_url="http://llama") as client:
        backend, info = await connect(client)
    assert backend.name == info.backend == "llamacpp"


async def test_not_llamacpp_without_props() -> None:
    with pytest.raises(NotLlamaCpp, match=r"no llama\.cpp /props"):
        await _info({"/v1/models": "v1_models"})


async def test_metrics_off_is_named() -> None:
    transport = server_transport(FOLDER, {"/metrics": 501}, stream_path=llamacpp.COMPLETION)
    async with httpx.AsyncClient(transport=transport, base_url="http://llama") as client:
        with pytest.raises(MetricsDisabled, match="501 — metrics are off; start llama-server"):
            await llamacpp.fetch_metrics(client)


async def _probe(metrics: tuple[str, ...]) -> ProbeResult:
    stream = capture(FOLDER)
    clock = FakeClock(stream["meta"]["t_send"])
    transport = server_transport(
        FOLDER, ROUTES, stream_path=llamacpp.COMPLETION, clock=clock, metrics=metrics
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://llama") as client:
        return await llamacpp.run_probe(client, max_tokens=128, clock=clock)


async def test_replayed_probe_takes_steps_from_the_counters() -> None:
    result = await _probe(("metrics_before", "metrics_after"))
    stream = capture(FOLDER)
    lines = stream["lines"]
    chunks = [
        (lines[i + 1]["t"], json.loads(line["line"][len("data: ") :]))
        for i, line in enumerate(lines)
        if line["line"].startswith("data: {")
    ]
    tokens = [(t, c) for t, c in chunks if not c["stop"]]
    (t0, first), (t_last, _) = tokens[0], tokens[-1]
    timings = chunks[-1][1]["timings"]
    figures = run_figures(result)
    assert figures.completion_tokens == timings["predicted_n"] == 128
    # One chunk per token, but the first token waited for the second (the two bytes of one
    # UTF-8 character), so the first chunk carries two.
    assert len(tokens) == 127 and first["tokens_predicted"] == 2
    # Steps: predicted_n − 1 − draft_n_accepted; the first chunk's second token took a step, so
    # the steps timed from the first chunk are 82 · 126/127 (docs/design.md §4's proportional rule).
    assert figures.verify_ct == 128 - 1 - timings["draft_n_accepted"] == 82
    v_decode = 82 * 126 / 127
    assert figures.accept_length == pytest.approx(126 / v_decode)
    assert figures.cycle_ms == pytest.approx(1000 * (t_last - t0) / v_decode)
    # This was the server's first request: its first step also set up the draft model (the
    # first chunk came 170 ms after a 4 ms prefill), which the server's generation time counts
    # and the client's decode time, from the first chunk on, does not.
    assert timings["prompt_ms"] < 5 and 1000 * (t0 - stream["meta"]["t_send"]) > 150
    assert timings["predicted_ms"] / 82 > 1.5 * figures.cycle_ms
    assert figures.cycle_source == "timings"
    assert figures.cycle_ms_p50 is None and figures.cycle_ms_p95 is None
    assert figures.server_accept_length == pytest.approx(1 + 45 / 81)
    assert result.finish_reason == "limit"


async def test_no_server_accept_when_other_requests_ran() -> None:
    result = await _probe(("metrics_before", "metrics_after_concurrent"))
    assert result.verify_ct == 82 and run_figures(result).server_accept_length is None


def test_payload_is_greedy_and_ignores_eos() -> None:
    payload = llamacpp.completion_payload("hi", 7)
    assert payload == {
        "prompt": "hi",
        "n_predict": 7,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
    }


async def test_waits_for_the_server_to_count_the_probe() -> None:
    # llama.cpp counts a request when it releases its slot, a moment after the last chunk.
    result = await _probe(("metrics_before", "metrics_before", "metrics_before", "metrics_after"))
    assert run_figures(result).server_accept_length == pytest.approx(1 + 45 / 81)
    never = await _probe(("metrics_before",))  # gives up after SETTLE_SCRAPES scrapes
    assert never.scrapes is not None and run_figures(never).server_accept_length is None
