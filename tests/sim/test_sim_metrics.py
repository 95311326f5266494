"""/metrics: shape per version, families against the capture, counters against streams."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
from sim_helpers import (
    PROMPT,
    StartSim,
    capture_text,
    families,
    fast,
    generate_body,
    sample_value,
    stream_chunks,
)

from specmon.sim import SimServer

Client = Callable[..., httpx.AsyncClient]


async def _capture_like_traffic(c: httpx.AsyncClient) -> None:
    """What realserver/capture.py sent: native streams, one non-stream, completions, chat."""
    for _ in range(2):
        await stream_chunks(c, generate_body(128))
    await c.post("/generate", json=generate_body(128, stream=False))
    body = {"prompt": PROMPT, "max_tokens": 64, "stream": True}
    body["stream_options"] = {"include_usage": True}
    await stream_chunks(c, body, "/v1/completions")
    chat = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 64, "stream": True}
    await stream_chunks(c, chat, "/v1/chat/completions")
    await c.get("/server_info")


@pytest.mark.slow
async def test_0_5_17_families_and_label_keys_match_capture(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(fast(version="0.5.17", extra_args={"decode_log_interval": 10}))
    async with client_for(sim) as c:
        await _capture_like_traffic(c)
        text = (await c.get("/metrics")).text
    ours, real = families(text), families(capture_text("metrics_after"))
    assert set(ours) == set(real)
    for name, keys in real.items():
        assert ours[name] == keys, name


@pytest.mark.slow
async def test_plain_0_5_17_has_no_verify_counter(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17", speculative_algorithm=None))
    async with client_for(sim) as c:
        await _capture_like_traffic(c)
        text = (await c.get("/metrics")).text
    ours, real = families(text), families(capture_text("metrics_after", "plain"))
    assert "sglang:spec_verify_calls" not in real
    assert set(ours) == set(real)
    assert sample_value(text, "sglang:spec_accept_length") == 0.0  # exported, 0 when spec off
    assert sample_value(text, "sglang:spec_num_draft_tokens") == 0.0


async def test_exposition_format_like_sglang(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    async with client_for(sim) as c:
        await stream_chunks(c, generate_body(16))
        r = await c.get("/metrics")
    assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = r.text
    assert "_created" not in text
    lines = [x for x in text.splitlines() if x.startswith("sglang:e2e_request_latency_seconds")]
    assert lines[0].startswith("sglang:e2e_request_latency_seconds_sum{")
    assert all("_bucket{" in x for x in lines[1:-1])
    assert lines[-1].startswith("sglang:e2e_request_latency_seconds_count{")
    assert 'le="+Inf"' in lines[-2]
    retracted = next(x for x in text.splitlines() if x.startswith("sglang:num_retracted_reqs{"))
    assert 'pid="' in retracted
    # Labels alphabetical, exactly as the capture prints the same series.
    real = next(
        x
        for x in capture_text("metrics_after").splitlines()
        if x.startswith("sglang:gen_throughput{")
    )
    ours = next(x for x in text.splitlines() if x.startswith("sglang:gen_throughput{"))
    assert (
        ours.split("{")[1].split("}")[0].replace("meta-llama/Llama-3.3-70B-Instruct", "tiny-llama")
        == real.split("{")[1].split("}")[0]
    )


@pytest.mark.parametrize(
    ("version", "sched", "tok", "tok_streaming"),
    [
        ("0.4.6", ("engine_type", "model_name"), ("model_name",), ("model_name",)),
        (
            "0.5.4",
            ("engine_type", "model_name", "pp_rank", "tp_rank"),
            ("model_name",),
            ("model_name",),
        ),
        (
            "0.5.23",
            ("engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank"),
            ("engine_type", "model_name"),
            ("engine_type", "is_streaming", "model_name"),
        ),
    ],
)
async def test_label_sets_per_version(
    start_sim: StartSim,
    client_for: Client,
    version: str,
    sched: tuple[str, ...],
    tok: tuple[str, ...],
    tok_streaming: tuple[str, ...],
) -> None:
    sim = await start_sim(fast(version=version))
    async with client_for(sim) as c:
        await stream_chunks(c, generate_body(8))
        fams = families((await c.get("/metrics")).text)
    assert fams["sglang:gen_throughput"] == {sched}
    assert fams["sglang:spec_accept_length"] == {sched}
    assert fams["sglang:inter_token_latency_seconds"] == {tok}
    assert fams["sglang:generation_tokens"] == {tok_streaming}
    assert fams["sglang:time_to_first_token_seconds"] == {tok_streaming}
    new = ("sglang:realtime_tokens", "sglang:cuda_graph_passes", "sglang:spec_verify_calls")
    for name in new:
        assert (name in fams) == (version == "0.5.23"), name
    assert ("sglang:spec_accept_rate" in fams) == (version != "0.4.6")
    tpot = "sglang:request_time_per_output_token_seconds" in fams
    assert tpot == (version == "0.5.23")


async def test_metrics_404_when_disabled(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17", enable_metrics=False))
    async with client_for(sim) as c:
        r = await c.get("/metrics")
        assert (r.status_code, r.json()) == (404, {"detail": "Not Found"})
        info = (await c.get("/server_info")).json()
        assert info["enable_metrics"] is False
        assert "last_gen_throughput" in info["internal_states"][0]  # works without metrics
        meta = (await c.post("/generate", json=generate_body(4, stream=False))).json()["meta_info"]
        assert "forward_entry_time" not in meta
        assert "request_received_ts" not in meta


async def test_tokenizer_counters_appear_with_the_first_request(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    async with client_for(sim) as c:
        before = families((await c.get("/metrics")).text)
        assert "sglang:gen_throughput" in before  # scheduler gauges published at start
        assert "sglang:generation_tokens" not in before  # absent until observed, not 0
        await stream_chunks(c, generate_body(4))
        after = families((await c.get("/metrics")).text)
    assert "sglang:generation_tokens" in after


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.5.17", "0.5.23"])
async def test_counters_agree_with_streams(
    start_sim: StartSim, client_for: Client, version: str
) -> None:
    sim = await start_sim(fast(version=version, concurrency_slowdown=0.05))
    async with client_for(sim) as c:
        await stream_chunks(c, generate_body(8))
        base = (await c.get("/metrics")).text
        bodies = [generate_body(n, text=f"prompt {n} " * n) for n in (17, 40, 63, 90)]
        results = await asyncio.gather(*(stream_chunks(c, b) for b in bodies))
        whole = (await c.post("/generate", json=generate_body(25, stream=False))).json()
        after = (await c.get("/metrics")).text
    finals = [r[-1]["meta_info"] for r in results] + [whole["meta_info"]]

    def delta(name: str, **labels: str) -> float:
        return sample_value(after, name, **labels) - sample_value(base, name, **labels)

    assert delta("sglang:generation_tokens_total") == sum(m["completion_tokens"] for m in finals)
    assert delta("sglang:prompt_tokens_total") == sum(m["prompt_tokens"] for m in finals)
    assert delta("sglang:spec_verify_calls_total") == sum(m["spec_verify_ct"] for m in finals)
    assert delta("sglang:num_requests_total", is_streaming="true") == 4
    assert delta("sglang:num_requests_total", is_streaming="false") == 1
    assert delta("sglang:e2e_request_latency_seconds_count") == 5
    assert delta("sglang:time_to_first_token_seconds_count") == 5
    # Decode counters: every verify step of every request, bonus tokens included.
    recs = sim.emitted[-5:]
    # One pass per batch step: concurrent requests share steps (same deadline).
    batch_steps = {t for r in recs for t in r.step_deadlines[1:]}
    assert delta("sglang:cuda_graph_passes_total", mode="decode_cuda_graph") == len(batch_steps)
    assert len(batch_steps) < sum(r.verify_ct for r in recs)
    assert delta("sglang:realtime_tokens_total", mode="decode") == sum(
        sum(a + 1 for a in r.step_accepted) for r in recs
    )
    # Inter-token latency is per token: _count counts every token after the first.
    itl = delta("sglang:inter_token_latency_seconds_count")
    assert itl == sum(m["completion_tokens"] - 1 for m in finals)


async def test_gauges_publish_every_decode_log_interval(start_sim: StartSim) -> None:
    interval = 8
    sim = await start_sim(fast(version="0.5.17", extra_args={"decode_log_interval": interval}))
    store = sim.state.observer.store
    async with httpx.AsyncClient(base_url=sim.url) as c:
        chunks = await stream_chunks(c, generate_body(12))  # fewer than 8 verify steps
        steps = len(chunks) - 1
        assert steps < interval
        assert store.value("sglang:spec_accept_length") == 0.0
        assert store.value("sglang:gen_throughput") == 0.0
        chunks = await stream_chunks(c, generate_body(60))
    assert store.value("sglang:gen_throughput") > 0  # type: ignore[operator]
    # The published window is exact: tokens / request-steps of the last full window.
    accepted = [*sim.emitted[-2].step_accepted, *sim.emitted[-1].step_accepted]
    published = (len(accepted) // interval) * interval
    assert published >= interval
    window = accepted[published - interval : published]
    assert store.value("sglang:spec_accept_length") == pytest.approx(
        sum(a + 1 for a in window) / interval
    )
    assert store.value("sglang:spec_accept_rate") == pytest.approx(sum(window) / (interval * 2))
    assert len(chunks) - 1 + steps == len(accepted)


async def test_openmetrics_negotiation(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    async with client_for(sim) as c:
        await stream_chunks(c, generate_body(4))
        r = await c.get("/metrics", headers={"Accept": "application/openmetrics-text"})
    assert r.headers["content-type"].startswith("application/openmetrics-text")
    text = r.text
    assert text.endswith("# EOF\n")
    assert "# TYPE sglang:generation_tokens counter" in text
    assert "\nsglang_generation_tokens_total{" in text


async def test_restart_resets_counters(start_sim: StartSim, client_for: Client) -> None:
    sim: SimServer = await start_sim(fast(version="0.5.17"))
    url = sim.url
    async with client_for(sim) as c:
        await stream_chunks(c, generate_body(20))
        before = (await c.get("/metrics")).text
        info_before = (await c.get("/server_info")).json()
    assert sample_value(before, "sglang:generation_tokens_total") == 20
    await sim.restart()
    assert sim.url == url
    async with client_for(sim) as c:
        after = (await c.get("/metrics")).text
        info_after = (await c.get("/server_info")).json()
        assert "sglang:generation_tokens" not in families(after)
        assert sample_value(after, "sglang:realtime_tokens_total") == 0
        await stream_chunks(c, generate_body(5))
        again = (await c.get("/metrics")).text
    assert sample_value(again, "sglang:generation_tokens_total") == 5
    assert info_after["startup_time"] != info_before["startup_time"]
    assert info_after["random_seed"] != info_before["random_seed"]
    pid = "pid=" + before.split("pid=")[1].split(",")[0]
    assert pid not in after  # new scheduler process


async def test_restart_with_new_flags(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.23"))
    await sim.restart(fast(version="0.5.23", speculative_algorithm=None, tp_size=4))
    async with client_for(sim) as c:
        info = (await c.get("/server_info")).json()
        chunks = await stream_chunks(c, generate_body(6))
    assert info["speculative_algorithm"] is None
    assert info["tp_size"] == 4
    assert len(chunks) == 6
    assert "spec_verify_ct" not in chunks[-1]["meta_info"]


@pytest.mark.parametrize(("version", "zeroed"), [("0.5.17", True), ("0.4.6", False)])
async def test_idle_refresh_zeroes_throughput(
    start_sim: StartSim, client_for: Client, version: str, zeroed: bool
) -> None:
    sim = await start_sim(fast(version=version, extra_args={"decode_log_interval": 4}))
    async with client_for(sim) as c:
        await stream_chunks(c, generate_body(40))
    state = sim.state
    store = state.observer.store
    busy = store.value("sglang:gen_throughput")
    assert busy is not None
    assert busy > 0
    # 30 s without decode work, on the engine's clock (no waiting in the test).
    state.observer.refresh_idle(state.engine, state.observer.last_decode_mono + 31)
    idle = store.value("sglang:gen_throughput")
    assert (idle == 0.0) == zeroed
    assert (state.observer.last_gen_throughput == 0.0) == zeroed
