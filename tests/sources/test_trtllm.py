"""The TensorRT-LLM backend's parsers on text shaped as `trtllm-serve` serves it (no real
capture: docs/interfaces.md §7), its detection refusals, and metrics off."""

from __future__ import annotations

import httpx
import pytest

from specmon.errors import MetricsDisabled, NotThisServer
from specmon.sources.backends import trtllm

L = 'engine_type="undefined",model_name="undefined"'
SCRAPE = f"""\
# HELP trtllm_generation_tokens_total Cumulative number of generation (output) tokens produced.
# TYPE trtllm_generation_tokens_total counter
trtllm_generation_tokens_total{{{L}}} 120.0
trtllm_request_success_total{{{L},finished_reason="length"}} 2.0
trtllm_spec_decode_drafted_tokens_total{{{L},token_position="0"}} 40.0
trtllm_spec_decode_drafted_tokens_total{{{L},token_position="1"}} 40.0
trtllm_spec_decode_drafted_tokens_total{{{L},token_position="2"}} 40.0
trtllm_spec_decode_accepted_tokens_total{{{L},token_position="0"}} 30.0
trtllm_spec_decode_accepted_tokens_total{{{L},token_position="1"}} 12.0
trtllm_spec_decode_num_draft_tokens_total{{{L}}} 3.0
trtllm_spec_decode_num_accepted_tokens_total{{{L}}} 1.0
trtllm_spec_decode_acceptance_length{{{L},pid="4242"}} 2.0
trtllm_num_requests_running{{{L},pid="4242"}} 0.0
"""


def test_drafts_come_from_the_per_position_counters() -> None:
    m = trtllm.metrics_from_text(SCRAPE)
    assert m.spec_drafts_total == 40  # position 0: every drafting step
    assert m.spec_draft_tokens_total == 120  # not the iteration counter's 3
    assert m.spec_accepted_tokens_total == 42
    # Position 2 was drafted and never accepted: it has no accepted series, and reads 0.
    assert m.spec_accepted_per_position == (30.0, 12.0, 0.0)
    assert m.generation_tokens_total == 120 and m.num_requests_total == 2
    assert m.spec_accept_length == 2.0 and m.num_running_reqs == 0


def test_a_server_that_has_not_drafted_shows_no_speculation() -> None:
    m = trtllm.metrics_from_text(f"trtllm_prompt_cached_tokens_total{{{L}}} 0.0\n")
    assert m.spec_drafts_total is None and m.spec_accepted_per_position is None
    assert trtllm.server_info_from("1.4.0", {"id": "m"}, m).speculative is None


def _client(routes: dict[str, tuple[int, object]]) -> httpx.AsyncClient:
    def handle(request: httpx.Request) -> httpx.Response:
        status, body = routes.get(request.url.path, (404, {"detail": "Not Found"}))
        return httpx.Response(status, json=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://trt")


async def test_a_vllm_model_card_is_not_trtllm() -> None:
    card = {"id": "m", "object": "model", "created": 1, "owned_by": "vllm"}
    routes = {"/version": (200, {"version": "0.32.0"}), "/v1/models": (200, {"data": [card]})}
    async with _client(routes) as client:
        with pytest.raises(NotThisServer, match="not TensorRT-LLM's model card"):
            await trtllm.fetch_server_info(client)


async def test_no_version_is_not_trtllm() -> None:
    async with _client({}) as client:
        with pytest.raises(NotThisServer, match="no TensorRT-LLM /version"):
            await trtllm.fetch_server_info(client)


async def test_metrics_off_is_named() -> None:
    async with _client({}) as client:
        with pytest.raises(MetricsDisabled, match="404 — metrics are off; launch with return_perf"):
            await trtllm.fetch_metrics(client)
