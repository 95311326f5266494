"""/metrics: real 0.5.17 captures, every version's label shape, aggregation, faults, fuzzing."""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from strategies import exposition_lines

from specmon.errors import MalformedResponse, MetricsDisabled, SpecmonError
from specmon.sources.metrics import fetch_metrics, metrics_from_text

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sglang-0.5.17"


def _text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_real_spec_capture_after_traffic() -> None:
    m = metrics_from_text(_text("spec/metrics_after"))
    # Summed over is_streaming="true"/"false" series (0.5.20+ label, present in 0.5.17).
    assert m.generation_tokens_total == 136 + 512
    assert m.prompt_tokens_total == 78 + 321
    assert m.num_requests_total == 7
    assert m.spec_verify_calls_total == 209
    assert m.realtime_decode_tokens_total == 676  # mode="decode" only
    assert m.decode_passes_total == 217  # mode="decode_none" (CUDA graphs were off)
    assert m.spec_accept_length == pytest.approx(3.1)
    assert m.spec_accept_rate == pytest.approx(0.7)
    assert m.num_running_reqs == 0
    assert m.ttft_seconds is not None and m.ttft_seconds.count == 7
    assert m.ttft_seconds.buckets[-1][0] == float("inf")
    assert m.itl_seconds is not None and m.itl_seconds.sum > 0
    assert "spec_verify_calls_total" in m.families


def test_openmetrics_underscore_names_parse_the_same() -> None:
    plain = metrics_from_text(_text("spec/metrics"))
    escaped = metrics_from_text(_text("spec/metrics_openmetrics"))
    assert escaped.generation_tokens_total == plain.generation_tokens_total == 8
    assert escaped.spec_verify_calls_total == plain.spec_verify_calls_total == 5
    assert escaped.realtime_decode_tokens_total == plain.realtime_decode_tokens_total


def test_plain_server_has_no_verify_counter_and_unobserved_histograms_are_unknown() -> None:
    m = metrics_from_text(_text("plain/metrics"))
    assert m.spec_verify_calls_total is None  # absent family: unknown, not zero
    assert m.itl_seconds is None
    assert m.spec_accept_length == 0.0  # SGLang exports it as 0 with speculation off


def test_restart_capture_counters_are_lower() -> None:
    before = metrics_from_text(_text("plain/metrics_after"))
    after = metrics_from_text(_text("plain_metrics_after_restart.txt"))
    assert before.generation_tokens_total is not None and after.generation_tokens_total is not None
    assert after.generation_tokens_total < before.generation_tokens_total


V046 = """\
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{engine_type="unified",model_name="m"} 412.87
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{engine_type="unified",model_name="m"} 3.42
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 256.0
# TYPE sglang:time_per_output_token_seconds histogram
sglang:time_per_output_token_seconds_bucket{le="0.005",model_name="m"} 0.0
"""

V054_DP2_ALL_SCHEDULERS = """\
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 3.0
sglang:num_running_reqs{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="1"} 3.0
sglang:num_running_reqs{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 5.0
sglang:num_running_reqs{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="1"} 5.0
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 100.0
sglang:gen_throughput{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 120.0
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 2.0
sglang:spec_accept_length{dp_rank="1",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 3.0
# TYPE sglang:spec_accept_rate gauge
sglang:spec_accept_rate{dp_rank="0",engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 0.5
"""  # noqa: E501

V0523_PID = """\
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pid="11",pp_rank="0",tp_rank="0"} 1.0
sglang:num_queue_reqs{engine_type="unified",model_name="m",moe_ep_rank="0",pid="12",pp_rank="0",tp_rank="0"} 2.0
# TYPE sglang:realtime_tokens_total counter
sglang:realtime_tokens_total{engine_type="unified",mode="decode",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 5240.0
sglang:realtime_tokens_total{engine_type="unified",mode="prefill_compute",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 99.0
# TYPE sglang:cuda_graph_passes_total counter
sglang:cuda_graph_passes_total{engine_type="unified",mode="decode_cuda_graph",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 1530.0
sglang:cuda_graph_passes_total{engine_type="unified",mode="prefill_cuda_graph",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 7.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 4.0
"""  # noqa: E501


def test_046_shape() -> None:
    m = metrics_from_text(V046)
    assert m.gen_throughput == pytest.approx(412.87)
    assert m.spec_accept_length == pytest.approx(3.42)
    assert m.generation_tokens_total == 256
    assert m.spec_verify_calls_total is None  # 0.5.13+ only
    assert m.realtime_decode_tokens_total is None  # 0.5.7+ only


def test_dp_groups_are_summed_and_tp_replicas_counted_once() -> None:
    m = metrics_from_text(V054_DP2_ALL_SCHEDULERS)
    assert m.num_running_reqs == 3 + 5
    assert m.gen_throughput == 220
    assert m.spec_accept_length == pytest.approx(2.5)  # a mean gauge: averaged over dp ranks
    assert m.spec_accept_rate == pytest.approx(0.5)


def test_pid_series_are_summed_and_modes_selected() -> None:
    m = metrics_from_text(V0523_PID)
    assert m.num_queue_reqs == 3
    assert m.realtime_decode_tokens_total == 5240
    assert m.decode_passes_total == 1530
    assert m.num_running_reqs is None  # vLLM's family is ignored


def test_nan_samples_are_unknown() -> None:
    m = metrics_from_text('sglang:gen_throughput{model_name="m"} NaN\n')
    assert m.gen_throughput is None


@pytest.mark.parametrize(
    "text", ['sglang:x{model_name="m" 1\n', 'sglang:x{a="1"} one\n', "<html>502</html>\n"]
)
def test_malformed_text_is_typed(text: str) -> None:
    with pytest.raises(MalformedResponse):
        metrics_from_text(text)


def _client(status: int, body: bytes) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/metrics"
        return httpx.Response(status, content=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://s")


async def test_404_means_metrics_off_and_says_how_to_fix() -> None:
    async with _client(404, b'{"detail":"Not Found"}') as client:
        with pytest.raises(MetricsDisabled, match="--enable-metrics"):
            await fetch_metrics(client)


async def test_fetch_parses_real_capture() -> None:
    async with _client(200, _text("spec/metrics_after").encode()) as client:
        m = await fetch_metrics(client)
    assert m.spec_verify_calls_total == 209


async def test_non_utf8_body_is_typed() -> None:
    async with _client(200, b"\xff\xfe\x00garbage") as client:
        with pytest.raises(MalformedResponse):
            await fetch_metrics(client)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    exposition_lines(
        [
            "sglang:gen_throughput",
            "sglang_generation_tokens_total",
            "sglang:spec_verify_calls_total",
            "sglang:ttft_bucket",
        ]
    )
)
def test_fuzz_metrics_text_yields_figures_or_typed_error(lines: list[str]) -> None:
    with contextlib.suppress(SpecmonError):
        metrics_from_text("".join(lines))
