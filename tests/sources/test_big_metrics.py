"""A /metrics body past `OFF_LOOP_CHARS` is sifted for the wanted lines in a worker thread, on
every backend that sifts (SGLang, vLLM, TensorRT-LLM): a 10 MB body must not hold the event loop
(keys, other targets) for the ~60 ms that sifting it takes."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable

import httpx
import pytest

from specmon.model import ServerMetrics
from specmon.sources import metrics
from specmon.sources.backends import trtllm, vllm

Fetch = Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]]

CASES = [
    ("sglang", metrics.fetch_metrics, "/metrics", "sglang:num_running_reqs 3\n"),
    ("vllm", vllm.fetch_metrics, "/metrics", "vllm:num_requests_running 3\n"),
    ("trtllm", trtllm.fetch_metrics, trtllm.METRICS_PATH, "trtllm_num_requests_running 3\n"),
]


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
    padding = "other_family_total 1\n" * (metrics.OFF_LOOP_CHARS // 20)  # past a MiB
    for body, in_thread in ((wanted, False), (wanted + padding, True)):
        on_loop.clear()
        async with _client(path, body) as client:
            read = await fetch(client)
        assert read.num_running_reqs == 3, name
        assert on_loop == [not in_thread], name
