"""Version shapes: routes, server info, /generate streams and meta_info, against the capture."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from sim_helpers import (
    PROMPT,
    StartSim,
    capture_chunks,
    capture_json,
    capture_text,
    fast,
    generate_body,
    stream_chunks,
)

from specmon.sim import SUPPORTED_VERSIONS

Client = Callable[..., httpx.AsyncClient]


@pytest.mark.parametrize(
    ("version", "server_info", "model_info", "ready"),
    [
        ("0.4.6", 404, 404, 404),
        ("0.5.4", 404, 404, 404),
        ("0.5.17", 200, 200, 404),
        ("0.5.23", 200, 200, 200),
    ],
)
async def test_route_matrix(
    start_sim: StartSim,
    client_for: Client,
    version: str,
    server_info: int,
    model_info: int,
    ready: int,
) -> None:
    sim = await start_sim(fast(version=version))
    async with client_for(sim) as c:
        assert (await c.get("/get_server_info")).status_code == 200
        assert (await c.get("/get_model_info")).status_code == 200
        assert (await c.get("/health")).status_code == 200
        assert (await c.get("/v1/models")).status_code == 200
        r = await c.get("/server_info")
        assert r.status_code == server_info
        if server_info == 404:
            assert r.json() == {"detail": "Not Found"}
        assert (await c.get("/model_info")).status_code == model_info
        assert (await c.get("/ready")).status_code == ready
        r = await c.get("/version")  # no SGLang version has it
        assert (r.status_code, r.json()) == (404, {"detail": "Not Found"})
        r = await c.post("/flush_cache")
        assert r.status_code == 200
        assert r.text.startswith("Cache flushed.")


async def test_0_4_6_merges_internal_state_flat(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.4.6", extra_args={"decode_log_interval": 4}))
    async with client_for(sim) as c:
        info = (await c.get("/get_server_info")).json()
        assert "internal_states" not in info
        assert info["last_gen_throughput"] == 0.0
        assert "avg_spec_accept_length" not in info  # no 4-step window flushed yet
        assert info["version"] == "0.4.6"
        assert info["speculative_algorithm"] == "EAGLE3"
        await stream_chunks(c, generate_body(40))
        info = (await c.get("/get_server_info")).json()
        assert info["last_gen_throughput"] > 0
        assert 1.0 <= info["avg_spec_accept_length"] <= 3.0


async def test_0_5_4_lists_internal_states(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.4"))
    async with client_for(sim) as c:
        info = (await c.get("/get_server_info")).json()
    assert isinstance(info["internal_states"], list)
    state = info["internal_states"][0]
    assert state["tp_size"] == 8  # the args again
    assert set(state["memory_usage"]) == {"weight", "kvcache", "token_capacity", "graph"}
    assert "startup_time" not in info
    assert list(info)[-2:] == ["internal_states", "version"]


async def test_0_5_17_server_info_has_the_capture_keys(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    async with client_for(sim) as c:
        info = (await c.get("/server_info")).json()
        assert (await c.get("/get_server_info")).json().keys() == info.keys()
    real = capture_json("server_info")
    assert list(info) == list(real)  # same keys, same order
    inner, real_inner = info["internal_states"][0], real["internal_states"][0]
    assert list(inner) == list(real_inner)
    assert isinstance(info["startup_time"], dict)
    assert "tokenizer_e2e" in info["startup_time"]
    assert "tokenizer_e2e" not in inner["startup_time"]
    assert info["port"] == int(sim.url.rsplit(":", 1)[1])
    assert info["speculative_num_draft_tokens"] == 3
    assert info["speculative_draft_model_path"]


async def test_avg_spec_accept_length_after_first_window(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    async with client_for(sim) as c:
        await stream_chunks(c, generate_body(30))  # about 15 verify steps: no 40-step window yet
        inner = (await c.get("/server_info")).json()["internal_states"][0]
        assert "avg_spec_accept_length" not in inner
        for _ in range(4):
            await stream_chunks(c, generate_body(64))
        inner = (await c.get("/server_info")).json()["internal_states"][0]
        assert 1.5 < inner["avg_spec_accept_length"] < 2.7
        assert (await c.post("/flush_cache")).status_code == 200
        inner = (await c.get("/server_info")).json()["internal_states"][0]
        assert "avg_spec_accept_length" not in inner  # flush resets the accumulators


async def test_0_5_23_launch_command_and_frontend(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.23", api_key="sekret-key"))
    headers = {"Authorization": "Bearer sekret-key"}
    async with client_for(sim, headers=headers) as c:
        info = (await c.get("/server_info")).json()
    assert info["frontend"] == "python"
    assert "--api-key sekret-key" in info["launch_command"]  # real servers do not redact
    assert info["api_key"] == "sekret-key"
    assert info["version"] == "0.5.23"
    assert list(info)[-3:] == ["internal_states", "version", "frontend"]


async def test_speculation_off_reports_nulls(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17", speculative_algorithm=None))
    async with client_for(sim) as c:
        info = (await c.get("/server_info")).json()
        chunks = await stream_chunks(c, generate_body(12))
    assert info["speculative_algorithm"] is None
    assert info["speculative_num_draft_tokens"] is None
    assert [c["meta_info"]["completion_tokens"] for c in chunks] == list(range(1, 13))
    real_final = capture_chunks("generate_stream_0.json", "plain")[-1]["meta_info"]
    assert list(chunks[-1]["meta_info"]) == list(real_final)


async def test_0_5_17_stream_meta_keys_match_capture(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    async with client_for(sim) as c:
        chunks = await stream_chunks(c, generate_body(64))
    real = capture_chunks("generate_stream_0.json")
    for ours, theirs in ((chunks[0], real[0]), (chunks[1], real[1]), (chunks[-1], real[-1])):
        assert list(ours) == list(theirs) == ["text", "output_ids", "meta_info"]
        assert list(ours["meta_info"]) == list(theirs["meta_info"])
    meta = chunks[-1]["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 64}
    # SGLang: chunks = 1 (prefill) + spec_verify_ct; accept length = completion / verify_ct.
    assert len(chunks) == 1 + meta["spec_verify_ct"]
    real_meta = real[-1]["meta_info"]
    assert len(real) == 1 + real_meta["spec_verify_ct"]
    assert meta["spec_accept_length"] == pytest.approx(64 / meta["spec_verify_ct"])
    hist = meta["spec_correct_drafts_histogram"]
    assert sum(hist) == meta["spec_verify_ct"]
    assert sum(j * n for j, n in enumerate(hist)) == meta["spec_num_correct_drafts"]
    assert meta["spec_num_proposed_drafts"] == 2 * meta["spec_verify_ct"]
    assert (
        chunks[-1]["output_ids"]
        == chunks[-2]["output_ids"] + chunks[-1]["output_ids"][len(chunks[-2]["output_ids"]) :]
    )
    assert len(chunks[-1]["output_ids"]) == 64  # cumulative
    assert chunks[0]["meta_info"]["completion_tokens"] == 1


async def test_0_5_17_non_stream_keys_match_capture(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    async with client_for(sim) as c:
        r = await c.post("/generate", json=generate_body(40, stream=False))
    assert r.headers["content-type"] == "application/json"
    ours, real = r.json(), capture_json("generate_nostream.json")
    assert list(ours) == list(real)
    assert list(ours["meta_info"]) == list(real["meta_info"])


@pytest.mark.parametrize("version", ["0.5.23", "0.5.4", "0.4.6"])
async def test_meta_info_per_version(start_sim: StartSim, client_for: Client, version: str) -> None:
    sim = await start_sim(fast(version=version))
    async with client_for(sim) as c:
        chunks = await stream_chunks(c, generate_body(20))
    first, final = chunks[0]["meta_info"], chunks[-1]["meta_info"]
    if version == "0.5.23":
        assert "spec_accepted_drafts" not in final  # aliases removed
        assert "spec_accept_histogram" not in final
        assert final["spec_correct_drafts_histogram"]
        assert "first_token_latency" in final
        assert first["cached_tokens_details"] is None
        assert "response_sent_to_client_ts" in first
    elif version == "0.5.4":
        assert list(first) == [
            "id",
            "finish_reason",
            "prompt_tokens",
            "weight_version",
            "completion_tokens",
            "cached_tokens",
        ]
        assert list(final)[-4:] == [
            "spec_accept_rate",
            "spec_accept_length",
            "spec_verify_ct",
            "e2e_latency",
        ]
    else:
        assert list(first) == [
            "id",
            "finish_reason",
            "prompt_tokens",
            "completion_tokens",
            "cached_tokens",
        ]
        assert list(final)[-2:] == ["spec_verify_ct", "e2e_latency"]
        assert all("output_ids" not in c for c in chunks)
        assert "spec_verify_ct" not in chunks[-2]["meta_info"]  # final chunk only


async def test_0_5_4_streams_output_ids_as_deltas(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.4"))
    async with client_for(sim) as c:
        chunks = await stream_chunks(c, generate_body(30))
        whole = (await c.post("/generate", json=generate_body(30, stream=False))).json()
    deltas = [c["meta_info"]["completion_tokens"] for c in chunks]
    sizes = [len(c["output_ids"]) for c in chunks]
    assert sizes == [b - a for a, b in zip([0, *deltas], deltas, strict=False)]
    assert sum(sizes) == 30
    assert len(whole["output_ids"]) == 30  # non-streaming answers carry them all
    assert chunks[-1]["text"].split() == chunks[-1]["text"].split()  # text stays cumulative
    assert len(chunks[-1]["text"].split()) == 30


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
async def test_unknown_sampling_param(
    start_sim: StartSim, client_for: Client, version: str
) -> None:
    sim = await start_sim(fast(version=version))
    body = {"text": "hi", "sampling_params": {"max_new_tokens": 4, "bogus_param": 1}}
    async with client_for(sim) as c:
        r = await c.post("/generate", json=body)
        if version == "0.5.23":
            assert r.status_code == 400
            assert r.json()["error"].startswith("unknown field `bogus_param`, expected one of")
            return
        # SamplingParams(**kwargs) raises TypeError -> FastAPI's plain-text 500 (the capture).
        meta = capture_json("generate_unknown_param.json.meta.json")
        assert (r.status_code, r.text) == (
            meta["status"],
            capture_text("generate_unknown_param.json"),
        )
        assert r.headers["content-type"] == meta["headers"]["content-type"]
        # Streaming: the 200 headers are out before the TypeError, then the connection drops.
        statuses: list[int] = []

        async def read() -> None:
            async with c.stream("POST", "/generate", json={**body, "stream": True}) as resp:
                statuses.append(resp.status_code)
                await resp.aread()

        with pytest.raises(httpx.RemoteProtocolError):
            await read()
        assert statuses == [200]


async def test_stream_interval_groups_steps(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17", speculative_algorithm=None))
    body = generate_body(20)
    body["sampling_params"]["stream_interval"] = 5
    async with client_for(sim) as c:
        chunks = await stream_chunks(c, body)
    # SGLang: the first token at once, then whenever >= interval tokens are unsent, and the end.
    assert [c["meta_info"]["completion_tokens"] for c in chunks] == [1, 6, 11, 16, 20]


async def test_repeated_prompt_hits_the_prefix_cache(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    async with client_for(sim) as c:
        first = (await c.post("/generate", json=generate_body(4, stream=False))).json()
        second = (await c.post("/generate", json=generate_body(4, stream=False))).json()
    assert first["meta_info"]["prompt_tokens"] == len(PROMPT.split())
    assert first["meta_info"]["cached_tokens"] == 0
    assert second["meta_info"]["cached_tokens"] == len(PROMPT.split()) - 1


async def test_v1_models_and_model_info_match_capture(
    start_sim: StartSim, client_for: Client
) -> None:
    sim = await start_sim(fast(version="0.5.17", served_model_name="tiny-llama"))
    async with client_for(sim) as c:
        models = (await c.get("/v1/models")).json()
        info = (await c.get("/model_info")).json()
    real = capture_json("v1_models")
    assert models.keys() == real.keys()
    assert models["data"][0].keys() == real["data"][0].keys()
    assert models["data"][0]["id"] == "tiny-llama"
    real_info = capture_json("model_info")
    assert set(info) <= set(real_info)
