"""The vLLM backend on real vLLM 0.32.0 answers (tests/fixtures/vllm-0.32.0-cpu): metrics, server
info with and without dev mode, detection, and the probe replayed with its captured timing."""

from __future__ import annotations

import json

import httpx
import pytest
from backend_replay import FIXTURES, capture, server_transport
from replay import FakeClock

from specmon.analysis.figures import run_figures
from specmon.backend_facts import VLLM
from specmon.errors import MalformedResponse, NotVllm
from specmon.model import ProbeResult, ServerInfo, ServerMetrics, SpecConfig
from specmon.sources.backends import RECENT_SCRAPE_S, Connection, connect, openai_compat, vllm

FOLDER = "vllm-0.32.0-cpu"
ROUTES = {"/version": "version", "/v1/models": "v1_models"}
DEV_ROUTES = {**ROUTES, "/server_info": "server_info_dev_mode.json"}


def _metrics(name: str) -> ServerMetrics:
    return vllm.metrics_from_text((FIXTURES / FOLDER / name).read_text())


def test_metrics_of_a_real_scrape() -> None:
    m = _metrics("metrics_after_concurrent")  # one stream plus six concurrent ones
    assert m.generation_tokens_total == 896 and m.prompt_tokens_total == 427
    assert m.num_requests_total == 7  # request_success_total over every finished_reason
    assert (m.spec_drafts_total, m.spec_draft_tokens_total) == (224, 658)
    assert m.spec_accepted_tokens_total == 546
    assert m.spec_accepted_per_position == (210, 133, 119, 84)
    assert m.num_running_reqs == 0 and m.token_usage == 0
    assert m.ttft_seconds is not None and m.ttft_seconds.count == 7
    assert "spec_decode_num_drafts_total" in m.families


def test_a_fresh_server_has_its_counters_at_zero() -> None:
    m = _metrics("metrics_before")
    assert (m.generation_tokens_total, m.spec_drafts_total) == (0, 0)
    assert m.spec_accepted_per_position == (0, 0, 0, 0)  # children exist from startup


async def _info(routes: dict[str, str | int]) -> ServerInfo:
    transport = server_transport(FOLDER, routes, stream_path=openai_compat.COMPLETIONS)
    async with httpx.AsyncClient(transport=transport, base_url="http://vllm") as client:
        return await vllm.fetch_server_info(client)


async def test_server_info_outside_dev_mode() -> None:
    info = await _info(ROUTES)
    assert (info.backend, info.version, info.model) == ("vllm", "0.32.0", "tiny-llama")
    assert info.title == "vLLM 0.32.0"
    # Speculation shows only in /metrics: on, with one series per draft position.
    assert info.speculative == SpecConfig("unknown", 4, None, None, length_name=VLLM.length_name)
    # Said as vLLM names it (issue 25: not "unknown steps=4").
    assert info.speculative.describe() == "method not exposed, num_speculative_tokens=4"
    assert info.speculative.brief() == "? k=4"
    assert info.metrics_enabled is True
    assert info.args == {
        "model": info.args["model"],  # the path it was loaded from
        "served_model_name": "tiny-llama",
        "max_model_len": 2048,
    }
    assert info.tp_size is None


async def test_server_info_in_dev_mode() -> None:
    info = await _info(DEV_ROUTES)
    assert info.speculative == SpecConfig("ngram", 4, None, None, None, VLLM.length_name)
    assert info.speculative.describe() == "ngram num_speculative_tokens=4"
    assert info.speculative.brief() == "ngram k=4"
    assert (info.tp_size, info.dp_size, info.pp_size) == (1, 1, 1)
    assert info.args["dtype"] == "torch.bfloat16" and info.args["max_num_seqs"] == 8
    assert info.args["speculative_method"] == "ngram"
    assert info.args["speculative_prompt_lookup_max"] == 4
    assert "instance_id" not in info.args  # per-launch values stay out of fingerprints


def _counted(*metrics: str) -> tuple[httpx.AsyncClient, list[str]]:
    """A client of the dev-mode captures serving `metrics` in turn, and the paths it asks."""
    replay = server_transport(
        FOLDER, DEV_ROUTES, stream_path=openai_compat.COMPLETIONS, metrics=metrics
    )
    paths: list[str] = []

    def counting(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        response: httpx.Response = replay.handler(request)  # type: ignore[assignment]
        return response

    return httpx.AsyncClient(transport=httpx.MockTransport(counting), base_url="http://vllm"), paths


async def test_identity_routes_read_again_only_after_a_relaunch() -> None:
    # metrics_before and metrics_after come from one launch, metrics_after_concurrent from
    # another (its process start time differs).
    client, paths = _counted("metrics_before", "metrics_after", "metrics_after_concurrent")
    async with client:
        first = await vllm.fetch_server_info(client)
        assert paths == ["/version", "/v1/models", "/server_info", "/metrics"]
        paths.clear()
        same_launch = await vllm.fetch_server_info(client)
        assert paths == ["/metrics"]
        assert same_launch == first
        paths.clear()
        relaunched = await vllm.fetch_server_info(client)
        assert paths == ["/metrics", "/version", "/v1/models", "/server_info"]
        assert relaunched.args == first.args
        paths.clear()
        await vllm.fetch_server_info(client)  # the new launch is known now
        assert paths == ["/metrics"]


async def test_a_scrape_just_taken_is_used_when_it_shows_the_known_launch() -> None:
    """The dashboard scrapes /metrics every second: its info read every 5 s takes none of its
    own while that scrape shows the launch it knows; a scrape of another launch (or none) does
    not count, and the server is asked."""
    same, other = _metrics("metrics_after"), _metrics("metrics_after_concurrent")
    assert same.process_start_time != other.process_start_time
    client, paths = _counted("metrics_before", "metrics_after_concurrent")
    async with client:
        first = await vllm.fetch_server_info(client)  # scrapes metrics_before
        paths.clear()
        assert await vllm.fetch_server_info(client, scrape=same) == first
        assert paths == []
        relaunched = await vllm.fetch_server_info(client, scrape=other)
        assert paths == ["/metrics", "/version", "/v1/models", "/server_info"]
        paths.clear()
        assert await vllm.fetch_server_info(client, scrape=other) == relaunched
        assert paths == []


async def test_a_connection_hands_its_info_read_its_last_scrape_while_recent() -> None:
    now = [0.0]
    client, paths = _counted("metrics_before", "metrics_after")
    async with client:
        connection = Connection(client, clock=lambda: now[0])
        await connection.info()  # detection: the identity routes and a scrape
        await connection.metrics()
        paths.clear()
        now[0] = RECENT_SCRAPE_S
        await connection.info()
        assert paths == []  # the scrape above served
        now[0] = RECENT_SCRAPE_S + 0.1
        await connection.info()
        assert paths == ["/metrics"]  # too old: scraped again


@pytest.mark.parametrize("routes", [ROUTES, DEV_ROUTES], ids=["plain", "dev-mode"])
async def test_detected_as_vllm(routes: dict[str, str | int]) -> None:
    # In dev mode vLLM answers /server_info too: SGLang's detection must not take it.
    transport = server_transport(FOLDER, routes, stream_path=openai_compat.COMPLETIONS)
    async with httpx.AsyncClient(transport=transport, base_url="http://vllm") as client:
        backend, info = await connect(client)
    assert backend.name == info.backend == "vllm"


async def test_not_vllm_without_version() -> None:
    with pytest.raises(NotVllm, match="no vLLM /version"):
        await _info({"/v1/models": "v1_models"})


def _chunks(stream: dict) -> list[tuple[float, dict]]:
    lines = stream["lines"]
    return [
        (lines[i + 1]["t"], json.loads(line["line"][len("data: ") :]))
        for i, line in enumerate(lines)
        if line["line"].startswith("data: {")
    ]


async def _probe(metrics: tuple[str, ...]) -> ProbeResult:
    stream = capture(FOLDER)
    clock = FakeClock(stream["meta"]["t_send"])
    transport = server_transport(
        FOLDER, ROUTES, stream_path=openai_compat.COMPLETIONS, clock=clock, metrics=metrics
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://vllm") as client:
        return await vllm.run_probe(client, max_tokens=128, clock=clock)


async def test_replayed_probe_gives_design_figures() -> None:
    result = await _probe(("metrics_before", "metrics_after"))
    stream = capture(FOLDER)
    chunks = [(t, c) for t, c in _chunks(stream) if c["choices"]]
    (t0, first), (t_last, last) = chunks[0], chunks[-1]
    t_send = stream["meta"]["t_send"]
    figures = run_figures(result)
    # Tokens from the cumulative usage of every chunk; steps = chunks after the first.
    assert figures.completion_tokens == last["usage"]["completion_tokens"] == 128
    assert first["usage"]["completion_tokens"] == 1
    assert figures.prompt_tokens == 70
    assert figures.verify_ct == len(chunks) - 1 == 67
    assert figures.ttft_ms == pytest.approx(1000 * (t0 - t_send))
    assert figures.decode_tok_s == pytest.approx(127 / (t_last - t0))
    assert figures.accept_length == pytest.approx(127 / 67)
    assert figures.cycle_ms == pytest.approx(1000 * (t_last - t0) / 67)
    # Steps: vLLM's own count over the probe (it ran alone), one per chunk here.
    assert figures.cycle_source == "counters" and figures.cycle_ms_p50 is not None
    # vLLM's own account of the request: 1 + Δaccepted/Δdrafts from the two scrapes.
    assert figures.server_accept_length == pytest.approx(1 + 60 / 33)
    # The counters' steps agree: each step is one token plus what it accepted.
    assert figures.verify_ct == 127 - 60
    assert result.finish_reason == "length"


async def test_no_server_accept_when_other_requests_ran() -> None:
    result = await _probe(("metrics_before", "metrics_after_concurrent"))
    figures = run_figures(result)
    assert result.verify_ct == 67 and figures.server_accept_length is None
    assert figures.cycle_source == "chunks"  # vLLM's counters mix in the other requests


async def test_stream_without_per_chunk_usage_is_refused() -> None:
    raw = (FIXTURES / FOLDER / "stream_include_usage_only.txt").read_text().splitlines()
    stream = {
        "meta": {"headers": {"content-type": "text/event-stream; charset=utf-8"}},
        "lines": [{"t": 0.0, "line": line} for line in raw],
    }
    transport = server_transport(
        FOLDER, ROUTES, stream_path=openai_compat.COMPLETIONS, stream=stream
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://vllm") as client:
        with pytest.raises(MalformedResponse, match="continuous_usage_stats"):
            await vllm.run_probe(client, max_tokens=128)


def test_payload_asks_for_usage_in_every_chunk() -> None:
    payload = openai_compat.completions_payload("hi", 5)
    assert payload["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert (payload["max_tokens"], payload["temperature"], payload["ignore_eos"]) == (5, 0, True)
    assert "model" not in payload  # vLLM serves its model when the request names none
