"""Helpers for the simulator tests: fast configs, stream readers, capture loaders."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from specmon.sim import SimConfig, SimServer

StartSim = Callable[[SimConfig], Awaitable[SimServer]]

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sglang-0.5.17"
PROMPT = "one two three four five six seven eight nine ten " * 6

# Millisecond steps: streams finish quickly and tests await them, never wall-clock sleeps.
FAST = SimConfig(plain_step_ms=1.0, cycle_ms=1.5, ttft_ms=2.0, prefill_ms_per_token=0.0)


def fast(**changes: Any) -> SimConfig:
    """The fast config with `changes` applied."""
    return replace(FAST, **changes)


def capture_json(name: str, kind: str = "spec") -> Any:
    """A captured JSON file."""
    return json.loads((FIXTURES / kind / name).read_text())


def capture_text(name: str, kind: str = "spec") -> str:
    """A captured text file."""
    return (FIXTURES / kind / name).read_text()


def capture_chunks(name: str, kind: str = "spec") -> list[dict[str, Any]]:
    """The `data:` JSON payloads of a captured stream."""
    lines = capture_json(name, kind)["lines"]
    return [json.loads(x["line"][6:]) for x in lines if x["line"].startswith("data: {")]


def generate_body(
    max_new_tokens: int = 32, stream: bool = True, text: str = PROMPT
) -> dict[str, Any]:
    """A native /generate body with only known sampling params."""
    return {
        "text": text,
        "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0, "ignore_eos": True},
        "stream": stream,
    }


async def sse_lines(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> list[str]:
    """POST `body` and return the non-empty `data:` lines of the streamed answer."""
    out: list[str] = []
    async with client.stream("POST", path, json=body) as resp:
        assert resp.status_code == 200, resp.status_code
        assert resp.headers["content-type"] == "text/event-stream; charset=utf-8"
        async for line in resp.aiter_lines():
            if line:
                assert line.startswith("data: "), line
                out.append(line)
    return out


async def stream_chunks(
    client: httpx.AsyncClient, body: dict[str, Any], path: str = "/generate"
) -> list[dict[str, Any]]:
    """The JSON payloads of a stream; asserts it ends with `[DONE]`."""
    lines = await sse_lines(client, path, body)
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in lines[:-1]]


def families(text: str) -> dict[str, set[tuple[str, ...]]]:
    """Family name -> set of sorted label-key tuples of its samples (`le` dropped), parsed by
    prometheus_client."""
    out: dict[str, set[tuple[str, ...]]] = {}
    for fam in text_string_to_metric_families(text):
        keys = {tuple(sorted(k for k in s.labels if k != "le")) for s in fam.samples}
        out[fam.name] = keys
    return out


def sample_value(text: str, name: str, **labels: str) -> float:
    """Sum of the samples called `name` whose labels include `labels` (0 if none)."""
    total = 0.0
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total
