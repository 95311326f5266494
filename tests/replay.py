"""Replay a captured SGLang stream through httpx, with the capture's own arrival times."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from specmon.model import ProbeResult
from specmon.sources.probe import run_probe

FIXTURES = Path(__file__).parent / "fixtures" / "sglang-0.5.17"


class FakeClock:
    """A clock the replayed stream advances: the probe reads the capture's arrival times."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def load_capture(name: str) -> dict[str, Any]:
    """One `*_generate_stream_N.json` capture."""
    return json.loads((FIXTURES / name).read_text())


def replay_transport(capture: dict[str, Any], clock: FakeClock) -> httpx.MockTransport:
    """A transport answering POST /generate with the capture, moving `clock` line by line."""

    async def body() -> AsyncIterator[bytes]:
        for line in capture["lines"]:
            clock.now = line["t"]
            yield (line["line"] + "\n").encode()

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/generate"
        headers = {"content-type": capture["meta"]["headers"]["content-type"]}
        return httpx.Response(capture["meta"]["status"], headers=headers, content=body())

    return httpx.MockTransport(handler)


async def replay_probe(name: str) -> ProbeResult:
    """The ProbeResult of one captured stream, timed as captured."""
    capture = load_capture(name)
    clock = FakeClock(capture["meta"]["t_send"])
    transport = replay_transport(capture, clock)
    async with httpx.AsyncClient(transport=transport, base_url="http://sglang") as client:
        return await run_probe(client, max_tokens=128, clock=clock)
