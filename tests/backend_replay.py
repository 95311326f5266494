"""A real server's captured answers served through httpx, its streams timed as captured.

For the vLLM and llama.cpp captures (tests/fixtures/vllm-0.32.0-cpu, llamacpp-cpu): GET routes
answer from files, successive `/metrics` scrapes walk through a list of captured scrapes, and the
streaming route replays `probe_stream.json` line by line, moving a `FakeClock` to each line's
arrival time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
from replay import FakeClock

FIXTURES = Path(__file__).parent / "fixtures"


def capture(folder: str, name: str = "probe_stream.json") -> dict[str, Any]:
    """A captured stream: `{"meta": {"t_send", …}, "lines": [{"t", "line"}]}`."""
    data: dict[str, Any] = json.loads((FIXTURES / folder / name).read_text())
    return data


def server_transport(
    folder: str,
    routes: Mapping[str, str | int],
    *,
    stream_path: str,
    stream: dict[str, Any] | None = None,
    clock: FakeClock | None = None,
    metrics: tuple[str, ...] = ("metrics_before", "metrics_after"),
) -> httpx.MockTransport:
    """Answer like the captured server.

    Args:
        folder: The fixture folder.
        routes: GET path -> fixture file name, or an HTTP status to answer with.
        stream_path: The POST path that streams.
        stream: The captured stream (default: the folder's `probe_stream.json`).
        clock: Moved to each streamed line's capture time.
        metrics: The scrapes `/metrics` answers with, in turn (the last one repeats).
    """
    streamed = stream if stream is not None else capture(folder)
    headers = {k.lower(): v for k, v in streamed["meta"]["headers"].items()}
    scrapes: Iterator[str] = iter(metrics)
    scrape = metrics[0]

    async def body() -> AsyncIterator[bytes]:
        for line in streamed["lines"]:
            if clock is not None:
                clock.now = line["t"]
            yield (line["line"] + "\n").encode()

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal scrape
        path = request.url.path
        if request.method == "POST" and path == stream_path:
            content_type = {"content-type": headers["content-type"]}
            return httpx.Response(200, headers=content_type, content=body())
        if path == "/metrics" and "/metrics" not in routes:
            scrape = next(scrapes, scrape)
            return httpx.Response(200, text=(FIXTURES / folder / scrape).read_text())
        answer = routes.get(path, 404)
        if isinstance(answer, int):
            return httpx.Response(answer, json={"detail": "Not Found"})
        return httpx.Response(200, content=(FIXTURES / folder / answer).read_bytes())

    return httpx.MockTransport(handler)
