"""Where specmon reads a server, its strings become safe text (`specmon.safe_text`): a server
info full of escape sequences, invalid UTF-8 and the echoed API key, of every backend, and the
error bodies quoted in messages, come out printable, one line, the key masked."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hostile_text import EVIL, KEY, raw_controls

from specmon.errors import HttpStatus, StreamErrorEvent
from specmon.model import ServerInfo
from specmon.safe_text import MASK, safe_text
from specmon.sources.backends import Connection
from specmon.sources.dcgm import telemetry_from_text

FIXTURES = Path(__file__).parents[1] / "fixtures"
SHOWN = safe_text(EVIL)


def _strings(value: object) -> list[str]:
    """Every string in a server info: its fields, its args' names and values."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _strings(item)]
    return []


def _info_strings(info: ServerInfo) -> list[str]:
    spec = info.speculative
    fields = [info.version, info.model, info.info_route]
    if spec is not None:
        fields += [spec.algorithm, spec.draft_model_path, spec.length_name]
    return [s for s in fields if s is not None] + _strings(dict(info.args))


def _sglang_info() -> dict[str, object]:
    body = json.loads((FIXTURES / "sglang-0.5.17" / "spec" / "server_info").read_text())
    assert isinstance(body, dict)
    return body


def _client(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.MockTransport(handler),
        base_url="http://s",
        headers={"Authorization": f"Bearer {KEY}"},
    )


async def test_sglang_server_info_comes_out_safe_and_without_the_key() -> None:
    body = _sglang_info()
    body.update(
        model_path=f"/models/{KEY}/{EVIL}",
        served_model_name=EVIL,
        version=EVIL,
        speculative_algorithm="EAGLE3" + EVIL,
        speculative_draft_model_path=EVIL,
        **{EVIL: [EVIL, {"nested": EVIL}]},
    )
    raw = json.dumps(body).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=raw, headers={"content-type": "application/json"})

    async with _client(handler) as client:
        info = await Connection(client).info()
    strings = _info_strings(info)
    assert not [s for s in strings if raw_controls(s)]
    assert not [s for s in strings if KEY in s]
    assert info.model == SHOWN and info.version == SHOWN
    assert info.args["model_path"] == f"/models/{MASK}/{SHOWN}"
    assert info.args[SHOWN] == [SHOWN, {"nested": SHOWN}]
    assert info.speculative is not None and info.speculative.algorithm == "EAGLE3" + SHOWN


@pytest.mark.parametrize("backend", ["vllm", "llamacpp"])
async def test_other_backends_model_names_come_out_safe(backend: str) -> None:
    """vLLM's model card and llama.cpp's `/props`, with a lone surrogate besides (valid JSON,
    unprintable: a body of invalid UTF-8 is refused whole, `MalformedResponse`)."""
    cards = {"object": "list", "data": [{"id": "@", "root": "@", "owned_by": "vllm"}]}
    props = {"model_path": "@", "build_info": "b1-@", "endpoint_metrics": False}

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if backend == "vllm" and path == "/version":
            body = json.dumps({"version": "@"}).encode()
        elif backend == "vllm" and path == "/v1/models":
            body = json.dumps(cards).encode()
        elif backend == "llamacpp" and path == "/props":
            body = json.dumps(props).encode()
        else:
            return httpx.Response(404)
        body = body.replace(b"@", json.dumps(EVIL)[1:-1].encode() + b"\\ud800")
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    async with _client(handler) as client:
        info = await Connection(client).info()
    assert info.backend == backend
    assert not [s for s in _info_strings(info) if raw_controls(s)], info
    assert info.model == SHOWN + "\ufffd"


async def test_an_error_body_quoted_in_a_message_is_one_safe_line() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, content=f"oops {EVIL}\nBearer {KEY}\r\n".encode())

    async with _client(handler) as client:
        with pytest.raises(HttpStatus) as caught:
            await Connection(client).info()
    message = str(caught.value)
    assert not raw_controls(message) and KEY not in message
    assert "\\x1b]0;PWNED" in message  # shown, so the reader sees what the server sent


def test_every_specmon_error_message_is_safe_text() -> None:
    error = StreamErrorEvent(f"the server sent an error: {EVIL}")
    assert str(error) == f"the server sent an error: {SHOWN}"


def test_gpu_label_values_come_out_safe() -> None:
    """A GPU endpoint's labels (DCGM's `modelName`, `Hostname`: `--gpu-metrics`, the agent)."""
    evil = EVIL.replace("\\", "")  # a label value's backslash is an escape of the format
    labels = f'gpu="0",UUID="GPU-{evil}",modelName="{evil}",Hostname="{evil}"'
    text = f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 50\n"
    telemetry = telemetry_from_text(text, "http://s/gpu-metrics")
    (gpu,) = telemetry.gpus
    assert gpu.name == safe_text(evil) and gpu.uuid == safe_text(f"GPU-{evil}")
    assert telemetry.hostname == safe_text(evil)


async def test_server_info_read_again_is_as_safe_and_new_args_are_made_safe() -> None:
    # Args the same as the last read's are not walked again (`Connection._kept`): every read
    # still comes out safe, and args that change are made safe anew.
    body = _sglang_info()
    body.update(version=EVIL, model_path=f"/models/{KEY}/{EVIL}")

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=body)

    async with _client(handler) as client:
        connection = Connection(client)
        reads = [await connection.info() for _ in range(3)]
        body["model_path"] = f"/other/{EVIL}"
        changed = await connection.info()
    for info in reads:
        assert info.version == SHOWN
        assert info.args["model_path"] == f"/models/{MASK}/{SHOWN}"
        assert not [s for s in _info_strings(info) if raw_controls(s) or KEY in s]
    assert changed.args["model_path"] == f"/other/{SHOWN}"
    assert changed.version == SHOWN
