"""OpenAI-compatible streams against the 0.5.17 capture, and 0.5.23's sglext chunk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sim_helpers import PROMPT, StartSim, capture_chunks, fast, stream_chunks

Client = Callable[..., httpx.AsyncClient]


def _shape(chunk: dict[str, Any]) -> tuple[object, ...]:
    """Keys of a chunk, its choice and its delta: what must match the capture."""
    choice = chunk["choices"][0] if chunk["choices"] else {}
    delta = choice.get("delta", {})
    usage = chunk.get("usage")
    return (
        tuple(chunk),
        tuple(choice),
        tuple(delta),
        tuple(usage) if isinstance(usage, dict) else usage,
    )


async def test_completions_stream_matches_capture(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17", served_model_name="tiny-llama"))
    body = {"model": "tiny-llama", "prompt": PROMPT, "max_tokens": 64, "temperature": 0}
    body |= {"stream": True, "stream_options": {"include_usage": True}}
    async with client_for(sim) as c:
        ours = await stream_chunks(c, body, "/v1/completions")
    real = capture_chunks("completions_stream.json")
    assert _shape(ours[0]) == _shape(real[0])
    assert _shape(ours[-2]) == _shape(real[-2])
    assert _shape(ours[-1]) == _shape(real[-1])
    assert ours[-2]["choices"][0]["finish_reason"] == "length"
    assert ours[-1]["usage"]["completion_tokens"] == 64
    assert ours[-1]["usage"]["prompt_tokens"] == len(PROMPT.split())
    text = "".join(c["choices"][0]["text"] for c in ours[:-1])
    assert len(text.split()) == 64
    assert ours[0]["model"] == "tiny-llama"
    assert ours[0]["id"] == sim.emitted[-1].rid


async def test_chat_stream_matches_capture(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.17"))
    body = {"model": "m", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 64}
    body |= {"stream": True, "stream_options": {"include_usage": True}}
    body["return_spec_tokens_details"] = True  # ignored before 0.5.20, as in the capture
    async with client_for(sim) as c:
        ours = await stream_chunks(c, body, "/v1/chat/completions")
    real = capture_chunks("chat_stream_spec_details.json")
    for i in (0, 1, -3, -2, -1):
        assert _shape(ours[i]) == _shape(real[i]), i
    assert ours[-2]["choices"][0]["finish_reason"] == "length"
    assert ours[-1]["usage"]["completion_tokens"] == 64
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in ours[:-1])
    assert len(content.split()) == 64
    rec = sim.emitted[-1]
    # Role chunk + one content chunk per output + finish chunk + usage chunk.
    assert len(ours) == 1 + len(rec.step_tokens) + 1 + 1


async def test_chat_spec_details_in_0_5_23(start_sim: StartSim, client_for: Client) -> None:
    sim = await start_sim(fast(version="0.5.23"))
    body = {"messages": [{"role": "user", "content": "hi there"}], "max_tokens": 30}
    body |= {"stream": True, "stream_options": {"include_usage": True}}
    body["return_spec_tokens_details"] = True
    async with client_for(sim) as c:
        ours = await stream_chunks(c, body, "/v1/chat/completions")
    details = ours[-2]["sglext"]["spec_tokens_details"]
    rec = sim.emitted[-1]
    assert ours[-2]["choices"] == []
    assert details["spec_verify_ct"] == rec.verify_ct
    assert details["spec_accept_length"] == pytest.approx(30 / rec.verify_ct)
    assert sum(details["spec_correct_drafts_histogram"]) == rec.verify_ct
    assert "completion_tokens_details" in ours[-1]["usage"]


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
async def test_non_stream_openai(start_sim: StartSim, client_for: Client, path: str) -> None:
    sim = await start_sim(fast(version="0.5.23"))
    body: dict[str, Any] = {"max_tokens": 12}
    if path.endswith("chat/completions"):
        body["messages"] = [{"role": "user", "content": "hello"}]
    else:
        body["prompt"] = "hello"
    async with client_for(sim) as c:
        r = await c.post(path, json=body)
    data = r.json()
    assert data["usage"]["completion_tokens"] == 12
    choice = data["choices"][0]
    text = choice["message"]["content"] if "message" in choice else choice["text"]
    assert len(text.split()) == 12
    assert choice["finish_reason"] == "length"
