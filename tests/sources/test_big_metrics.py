"""A body past `OFF_LOOP_CHARS` is read in a worker thread, on every backend: a /metrics sifted
for the wanted lines (SGLang, vLLM, TensorRT-LLM, llama.cpp), llama.cpp's /props and /slots
parsed and walked: a 10 MB body must not hold the event loop (keys, other targets) for the
~60 ms that sifting it takes, nor the second that walking a wide JSON one takes."""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from specmon.model import ServerMetrics
from specmon.sources import http, metrics
from specmon.sources.backends import llamacpp, trtllm, vllm

Fetch = Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]]

CASES = [
    ("sglang", metrics.fetch_metrics, "/metrics", "sglang:num_running_reqs 3\n"),
    ("vllm", vllm.fetch_metrics, "/metrics", "vllm:num_requests_running 3\n"),
    ("trtllm", trtllm.fetch_metrics, trtllm.METRICS_PATH, "trtllm_num_requests_running 3\n"),
    ("llamacpp", llamacpp.fetch_metrics, "/metrics", "llamacpp:requests_processing 3\n"),
]
LLAMACPP = Path(__file__).parent.parent / "fixtures" / "llamacpp-cpu"


def _client(path: str, body: str) -> httpx.AsyncClient:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == path
        return httpx.Response(200, text=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="http://x:1")


@pytest.mark.parametrize(("name", "fetch", "path", "wanted"), CASES, ids=[c[0] for c in CASES])
async def test_a_big_body_is_sifted_in_a_thread_and_a_small_one_on_the_loop(
    name: str, fetch: Fetch, path: str, wanted: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_loop: list[bool] = []
    sift = metrics.wanted_text

    def spied(*args: object) -> str:
        on_loop.append(threading.current_thread() is threading.main_thread())
        return sift(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(metrics, "wanted_text", spied)
    padding = "other_family_total 1\n" * (http.OFF_LOOP_CHARS // 20)  # past a MiB
    for body, in_thread in ((wanted, False), (wanted + padding, True)):
        on_loop.clear()
        async with _client(path, body) as client:
            read = await fetch(client)
        assert read.num_running_reqs == 3, name
        assert on_loop == [not in_thread], name


@pytest.mark.parametrize("wide", ["/props", "/slots"])
async def test_llamacpp_json_past_the_limit_is_read_in_a_thread(
    wide: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its real answers, one padded past a MiB: that one is parsed in a thread, the other on the
    loop, and the server reads the same."""
    answers = {
        path: json.loads((LLAMACPP / path.strip("/")).read_text()) for path in ("/props", "/slots")
    }
    padding = {f"pad{i}": i for i in range(http.OFF_LOOP_CHARS // 10)}
    if wide == "/props":
        answers[wide] |= padding
    else:
        answers[wide][0] |= padding
    on_loop: dict[str, bool] = {}
    parse = http.parse_json

    def spied(response: httpx.Response) -> object:
        on_loop[response.url.path] = threading.current_thread() is threading.main_thread()
        return parse(response)

    monkeypatch.setattr(http, "parse_json", spied)

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path in answers:
            return httpx.Response(200, json=answers[request.url.path])
        return httpx.Response(501)  # /metrics: off

    transport = httpx.MockTransport(answer)
    async with httpx.AsyncClient(transport=transport, base_url="http://x:1") as client:
        info = await llamacpp.fetch_server_info(client)
    assert info.version == answers["/props"]["build_info"]
    assert on_loop == {"/props": wide != "/props", "/slots": wide != "/slots"}
