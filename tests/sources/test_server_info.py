"""Server info of every SGLang shape (0.4.x flat, 0.5.x list, real 0.5.17) and secret masking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import json_values

from specmon.errors import AuthFailed, MalformedResponse, NotSGLang, SpecmonError
from specmon.model import SpecConfig
from specmon.sources.backends.sglang import fetch_server_info, parse_server_info
from specmon.sources.secrets import MASK, mask_command, shown_command

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sglang-0.5.17"


def _load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def test_real_0517_speculative() -> None:
    info = parse_server_info(_load("spec/server_info"))
    assert info.version == "0.5.17"
    assert info.model == "tiny-llama"
    assert (info.tp_size, info.dp_size, info.pp_size) == (1, 1, 1)
    assert info.speculative is not None
    assert info.speculative.algorithm == "NGRAM"
    assert info.speculative.num_draft_tokens == 4
    assert info.stream_interval == 1
    assert info.cuda_graph_disabled is True
    assert info.metrics_enabled is True
    assert info.last_gen_throughput == 0.0
    assert "internal_states" not in info.args and "model_path" in info.args


def test_real_0517_plain() -> None:
    info = parse_server_info(_load("plain/server_info"))
    assert info.speculative is None
    assert info.avg_spec_accept_length is None


V046_FLAT = {
    "model_path": "meta-llama/Llama-3.1-8B-Instruct",
    "served_model_name": "meta-llama/Llama-3.1-8B-Instruct",
    "tp_size": 2, "dp_size": 1, "enable_metrics": False, "api_key": "sk-secret",
    "speculative_algorithm": "EAGLE", "speculative_num_steps": 3,
    "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4,
    "stream_interval": 1, "cuda_graph_max_bs": 160, "disable_cuda_graph": False,
    "last_gen_throughput": 412.87, "avg_spec_accept_length": 3.41, "version": "0.4.6",
}  # fmt: skip

V0523_LIST = {
    "model_path": "/models/llama", "served_model_name": "llama", "tp_size": 8, "dp_size": 2,
    "pp_size": 1, "enable_metrics": True, "api_key": "sk-secret", "admin_api_key": None,
    "speculative_algorithm": None, "cuda_graph_max_bs_decode": 256,
    "launch_command": "python -m sglang.launch_server --model-path /m --api-key sk-secret "
    "--admin-api-key=adm1n --port 30000",
    "internal_states": [
        {"last_gen_throughput": 100.0, "memory_usage": {"weight": 15.0}},
        {"last_gen_throughput": 120.0},
    ],
    "version": "0.5.23", "frontend": "python",
}  # fmt: skip


def test_046_flat_internal_state() -> None:
    info = parse_server_info(V046_FLAT, "/get_server_info")
    assert info.version == "0.4.6"
    assert info.speculative is not None and info.speculative.describe() == (
        "EAGLE steps=3 topk=1 draft=4"
    )
    assert info.speculative.brief() == "EAGLE 3/1/4"  # the fleet table's cell
    assert info.last_gen_throughput == pytest.approx(412.87)
    assert info.avg_spec_accept_length == pytest.approx(3.41)
    assert info.cuda_graph_max_bs == 160
    assert info.metrics_enabled is False
    assert info.info_route == "/get_server_info"


def test_0523_list_of_dp_states_and_masking() -> None:
    info = parse_server_info(V0523_LIST)
    assert info.last_gen_throughput == 220.0  # summed over DP ranks
    assert info.cuda_graph_max_bs == 256
    assert info.speculative is None
    assert info.args["api_key"] == MASK
    assert info.args["admin_api_key"] is None  # "no key" stays visible as such
    assert "sk-secret" not in json.dumps(info.args)
    assert "adm1n" not in json.dumps(info.args)
    assert "--api-key ***" in info.args["launch_command"]


def test_mask_command_variants() -> None:
    cmd = "x --api-key 'a b' --admin-api-key=z --ssl-keyfile-password p --port 1"
    masked = mask_command(cmd)
    assert masked == "x --api-key *** --admin-api-key=*** --ssl-keyfile-password *** --port 1"
    assert mask_command("python -m m --port 1") == "python -m m --port 1"  # left as it was


def test_shown_command_masks_every_form_and_quotes_the_rest() -> None:
    words = ["env", "HF_TOKEN=k1", "OPENAI_API_KEY=k2", "PATH=/bin", "python", "--api-key", "k3",
             "--api-key=k4", "--note", "a b", "--hf-token", "--port", "1"]  # fmt: skip
    assert shown_command(words) == (
        "env HF_TOKEN=*** OPENAI_API_KEY=*** PATH=/bin python --api-key *** --api-key=*** "
        "--note 'a b' --hf-token --port 1"  # a secret flag with no value masks nothing after
    )


def test_settings_named_after_tokens_are_shown() -> None:
    """Only a flag whose last word is "token" holds one: `--speculative-num-draft-tokens 4`
    read "--speculative-num-draft-tokens ***" in `ab`'s plan and a server's launch command."""
    words = ["python", "--speculative-num-draft-tokens", "4", "--max-total-tokens", "8192",
             "--tokenizer-path", "/m", "--auth-token", "t1", "--token=t2",
             "--hf_token", "t3"]  # fmt: skip
    assert shown_command(words) == (
        "python --speculative-num-draft-tokens 4 --max-total-tokens 8192 --tokenizer-path /m "
        "--auth-token *** --token=*** --hf_token ***"
    )
    assert mask_command(" ".join(words[:5])) == " ".join(words[:5])


def _client(routes: dict[str, tuple[int, bytes]]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        status, body = routes.get(request.url.path, (404, b'{"detail":"Not Found"}'))
        return httpx.Response(status, content=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://s")


async def test_falls_back_to_get_server_info() -> None:
    body = json.dumps(V046_FLAT).encode()
    async with _client({"/get_server_info": (200, body)}) as client:
        info = await fetch_server_info(client)
    assert info.version == "0.4.6" and info.info_route == "/get_server_info"


async def test_neither_route_is_not_sglang() -> None:
    async with _client({}) as client:
        with pytest.raises(NotSGLang, match="not an SGLang server"):
            await fetch_server_info(client)


async def test_401_is_auth_failed() -> None:
    async with _client({"/server_info": (401, b'{"error":"Unauthorized"}')}) as client:
        with pytest.raises(AuthFailed, match="API key is missing"):
            await fetch_server_info(client)


@pytest.mark.parametrize("body", [b"<html>", b"[1, 2]", b"\xff"])
async def test_bad_bodies_are_malformed(body: bytes) -> None:
    async with _client({"/server_info": (200, body)}) as client:
        with pytest.raises(MalformedResponse):
            await fetch_server_info(client)


keys = st.sampled_from(sorted({*V046_FLAT, *V0523_LIST}))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, json_values))
def test_fuzz_any_shape_normalises_without_crashing(body: dict[str, Any]) -> None:
    try:
        info = parse_server_info(body)
    except SpecmonError:
        return
    assert info.backend == "sglang"


@pytest.mark.parametrize(
    ("config", "brief"),
    [
        (SpecConfig("NGRAM", 0, 10, 4), "NGRAM d4"),  # SGLang fills steps/topk with placeholders
        (SpecConfig("ngram", 4, None, None), "ngram s4"),  # vLLM: num_speculative_tokens
        (SpecConfig("draft", 16, None, None), "draft s16"),  # llama.cpp
        (SpecConfig("EAGLE3", 2, 1, 3), "EAGLE3 2/1/3"),
    ],
)
def test_a_spec_config_in_a_table_cell(config: SpecConfig, brief: str) -> None:
    assert config.brief() == brief
