"""Server behaviour: auth, faults, pacing against the model, ground-truth records, thread, CLI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import httpx
import pytest
from aiohttp.http_writer import StreamWriter
from aiohttp.test_utils import make_mocked_request
from sim_helpers import StartSim, fast, generate_body, sse_lines, stream_chunks

from specmon.sim import SimConfig, SimThread
from specmon.sim.__main__ import config_from_args
from specmon.sim.decode import DecodeModel
from specmon.sim.faults import Faults
from specmon.sim.sse import stream_request

Client = Callable[..., httpx.AsyncClient]


@pytest.mark.parametrize("version", ["0.4.6", "0.5.4", "0.5.17", "0.5.23"])
async def test_api_key(start_sim: StartSim, client_for: Client, version: str) -> None:
    sim = await start_sim(fast(version=version, api_key="k1"))
    new = version in ("0.5.17", "0.5.23")
    info = "/server_info" if new else "/get_server_info"
    async with client_for(sim) as c:
        for path in (info, "/v1/models", "/get_model_info"):
            r = await c.get(path)
            assert (r.status_code, r.json()) == (401, {"error": "Unauthorized"}), path
        r = await c.post("/generate", json=generate_body(2, stream=False))
        assert r.status_code == 401
        r = await c.get(info, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401
        # Exempt in every version: /health*, /metrics, OPTIONS.
        assert (await c.get("/health")).status_code == 200
        assert (await c.get("/health_generate")).status_code == 200
        assert (await c.get("/metrics")).status_code == 200
        assert (await c.options(info)).status_code != 401
        ready = (await c.get("/ready")).status_code
        assert ready == (200 if version == "0.5.23" else 401)
        ok = await c.get(info, headers={"Authorization": "Bearer k1"})
        assert ok.status_code == 200
        lower = (await c.get(info, headers={"Authorization": "bearer k1"})).status_code
        assert lower == (200 if new else 401)  # 0.5.8+ compares the scheme case-free


@pytest.mark.slow
async def test_hang_fault_times_out(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    sim.faults.hang.add("/server_info")
    async with client_for(sim) as c:
        with pytest.raises(httpx.ReadTimeout):
            await c.get("/server_info", timeout=0.2)
        assert (await c.get("/get_server_info")).status_code == 200  # other paths still answer
        sim.faults.hang.add("*")
        with pytest.raises(httpx.ReadTimeout):
            await c.get("/metrics", timeout=0.2)
        sim.faults.clear()
        assert (await c.get("/server_info")).status_code == 200


async def test_hung_request_is_released_on_stop(start_sim: StartSim) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    sim.faults.hang.add("/server_info")
    async with httpx.AsyncClient(base_url=sim.url, timeout=10) as c:
        pending = asyncio.create_task(c.get("/server_info"))
        await sim.hung.wait()
        await sim.stop()
        with pytest.raises(httpx.TransportError):
            await pending


async def test_status_fault(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.23"))
    sim.faults.status["/metrics"] = 503
    sim.faults.status["/server_info"] = 404
    async with client_for(sim) as c:
        assert (await c.get("/metrics")).status_code == 503
        r = await c.get("/server_info")
        assert (r.status_code, r.json()) == (404, {"detail": "Not Found"})
        assert (await c.get("/model_info")).status_code == 200


async def test_drop_stream_after(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    sim.faults.drop_stream_after = 3
    got: list[str] = []

    async def read(c: httpx.AsyncClient) -> None:
        async with c.stream("POST", "/generate", json=generate_body(64)) as resp:
            # A loop, not a comprehension: the stream breaks mid-way and what arrived must stay.
            async for line in resp.aiter_lines():
                if line:
                    got.append(line)  # noqa: PERF401

    async with client_for(sim) as c:
        with pytest.raises(httpx.RemoteProtocolError):
            await read(c)
        sim.faults.drop_stream_after = None
        await stream_chunks(c, generate_body(4))  # the server itself is fine
        metrics = (await c.get("/metrics")).text
    assert len(got) == 3
    assert "[DONE]" not in got[-1]
    assert sim.emitted[0].finish_reason == "abort"
    assert sim.emitted[0].completion_tokens >= 3
    assert "sglang:num_aborted_requests_total" in metrics


@pytest.mark.parametrize(
    ("version", "error"),
    [
        ("0.5.17", {"error": {"message": "Simulated mid-stream failure"}}),
        (
            "0.5.23",
            {
                "error": {
                    "message": "Simulated mid-stream failure",
                    "type": "invalid_request_error",
                    "code": 400,
                    "retryable": False,
                }
            },
        ),
    ],
)
async def test_stream_error_after(
    start_sim: StartSim, client_for: Client, version: str, error: dict[str, object]
) -> None:
    sim = await start_sim(fast(version=version))
    sim.faults.stream_error_after = 2
    async with client_for(sim) as c:
        lines = await sse_lines(c, "/generate", generate_body(64))
    assert len(lines) == 4
    assert json.loads(lines[2][6:]) == error
    assert lines[3] == "data: [DONE]"


async def test_chunks_follow_the_model_deadlines(start_sim: StartSim, client_for: Client) -> None:
    config = fast(version="0.5.23", cycle_ms=2.0, ttft_ms=3.0, prefill_ms_per_token=0.01)
    sim = await start_sim(config)
    async with client_for(sim) as c:
        chunks = await stream_chunks(c, generate_body(50, text="a b c d e f g h i j"))
    rec = sim.emitted[-1]
    model = DecodeModel.from_config(config)
    # Absolute deadlines: arrival + prefill, then one cycle per verify step, no drift.
    assert rec.step_deadlines[0] == pytest.approx(rec.arrival_mono + model.prefill_ms(10) / 1000)
    for i, t in enumerate(rec.step_deadlines):
        expected = rec.step_deadlines[0] + i * model.step_ms(1) / 1000
        assert t == pytest.approx(expected, abs=1e-9)
    assert rec.chunk_deadlines == rec.step_deadlines
    # Sent at or after the deadline (asyncio may wake a clock tick early, hence the epsilon).
    assert all(s >= d - 1e-6 for s, d in zip(rec.chunk_send_mono, rec.chunk_deadlines, strict=True))
    assert rec.chunk_completion_tokens == [c["meta_info"]["completion_tokens"] for c in chunks]
    assert rec.chunk_tokens == rec.step_tokens  # stream_interval 1: one chunk per step
    assert rec.completion_tokens == 50
    assert rec.verify_ct == len(chunks) - 1 == chunks[-1]["meta_info"]["spec_verify_ct"]
    assert sum(rec.step_tokens) == 50
    final = chunks[-1]["meta_info"]
    assert final["e2e_latency"] == pytest.approx(rec.step_deadlines[-1] - rec.arrival_mono)
    assert final["first_token_latency"] == pytest.approx(model.prefill_ms(10) / 1000)


async def test_concurrent_requests_share_slower_steps(
    start_sim: StartSim, client_for: Client
) -> None:
    config = fast(version="0.5.17", speculative_algorithm=None, concurrency_slowdown=0.5)
    sim = await start_sim(config)
    async with client_for(sim) as c:
        await asyncio.gather(*(stream_chunks(c, generate_body(20)) for _ in range(3)))
    recs = sim.emitted[-3:]
    model = DecodeModel.from_config(config)
    gaps = {
        round(b - a, 9)
        for r in recs
        for a, b in zip(r.step_deadlines[1:], r.step_deadlines[2:], strict=False)
    }
    # Every step with 2 or 3 requests in the batch takes 1 ms x (1 + 0.5 (n - 1)).
    allowed = {round(model.step_ms(n) / 1000, 9) for n in (1, 2, 3)}
    assert gaps <= allowed
    assert round(model.step_ms(3) / 1000, 9) in gaps


async def test_record_jsonl(start_sim: StartSim, client_for: Client, tmp_path: Path) -> None:
    path = tmp_path / "truth.jsonl"
    sim = await start_sim(fast(version="0.5.17", record_path=str(path)))
    async with client_for(sim) as c:
        await stream_chunks(c, generate_body(9))
        await c.post("/generate", json=generate_body(7, stream=False))
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert [r["completion_tokens"] for r in rows] == [9, 7]
    assert rows[0]["stream"] is True
    assert rows[1]["chunk_tokens"] == []  # not streamed
    assert sum(rows[0]["chunk_tokens"]) == 9
    assert rows[0]["rid"] == sim.emitted[0].rid


async def test_same_seed_same_streams(start_sim: StartSim, client_for: Client) -> None:
    runs = []
    for _ in range(2):
        sim = await start_sim(fast(version="0.5.17", seed=11))
        async with client_for(sim) as c:
            runs.append(await stream_chunks(c, generate_body(40)))
    texts = [[c["text"] for c in run] for run in runs]
    ids = [[c["meta_info"]["id"] for c in run] for run in runs]
    assert texts[0] == texts[1]
    assert ids[0] == ids[1]


def test_sim_thread_for_sync_callers() -> None:
    with SimThread(fast(version="0.5.17")) as sim:
        r = httpx.get(sim.url + "/server_info", timeout=5)
        assert r.status_code == 200
        url = sim.url
        sim.call(sim.server.restart)
        assert sim.url == url
        assert httpx.get(sim.url + "/health", timeout=5).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/health", timeout=1)


def test_cli_flags_map_to_config() -> None:
    cfg = config_from_args(
        [
            "--model-path",
            "m",
            "--tp",
            "4",
            "--speculative-algorithm",
            "none",
            "--enable-metrics",
            "--api-key",
            "k",
            "--port",
            "0",
            "--sglang-version",
            "0.5.4",
            "--cycle-ms",
            "20",
            "--record",
            "/tmp/x.jsonl",
        ]
    )
    assert cfg == SimConfig(
        version="0.5.4",
        model_path="m",
        tp_size=4,
        speculative_algorithm=None,
        enable_metrics=True,
        api_key="k",
        port=0,
        cycle_ms=20.0,
        record_path="/tmp/x.jsonl",
    )
    default = config_from_args([])
    assert default.port == 30000
    assert default.enable_metrics is False  # like SGLang's --enable-metrics


async def test_restart_cuts_open_streams(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17", cycle_ms=5.0))
    got: list[str] = []

    async def read(c: httpx.AsyncClient) -> None:
        async with c.stream("POST", "/generate", json=generate_body(500)) as resp:
            async for line in resp.aiter_lines():
                if line:
                    got.append(line)
                    if len(got) == 2:
                        await sim.restart()

    async with client_for(sim) as c:
        with pytest.raises(httpx.RemoteProtocolError):
            await read(c)
        chunks = await stream_chunks(c, generate_body(3))  # the new lifetime serves normally
    # Lines already received when the restart began may still be read before the cut.
    assert 2 <= len(got) < 500
    assert chunks[-1]["meta_info"]["completion_tokens"] == 3
    assert [r.epoch for r in sim.emitted] == [0, 1]
    assert sim.emitted[0].finish_reason == "abort"  # cut by the restart, never finished
    assert 0 < sim.emitted[0].completion_tokens < 500


async def test_a_client_gone_before_the_headers_aborts_its_request_quietly() -> None:
    """A client that hangs up before the stream's headers are written (the soak's faults cut
    probes so) has its request aborted as mid-stream, not a traceback in the server's log."""
    transport = mock.Mock(is_closing=mock.Mock(return_value=True))
    protocol = mock.Mock(transport=transport)
    writer = StreamWriter(protocol, asyncio.get_running_loop())
    request = make_mocked_request(
        "POST", "/generate", writer=writer, transport=transport, protocol=protocol
    )
    engine = mock.Mock()
    req = mock.Mock()
    await stream_request(request, engine, req, Faults(), lambda out, first: [], {})
    engine.abort.assert_called_once_with(req)
