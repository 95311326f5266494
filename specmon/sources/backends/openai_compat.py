"""What vLLM and TensorRT-LLM serve alike (`trtllm-serve` follows vLLM's OpenAI server): the
`{"version": …}` of `/version`, the model cards of `/v1/models`, and the streamed
`/v1/completions` the probe sends, its chunks carrying the cumulative usage and the choice."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from specmon.errors import HttpStatus, MalformedResponse, NotThisServer, SourceError
from specmon.sources.http import get, json_int, parse_json
from specmon.sources.probe import ChunkUpdate, stream_json

COMPLETIONS = "/v1/completions"


async def read_version(client: httpx.AsyncClient, not_it: type[NotThisServer], server: str) -> str:
    """`/version`'s version string.

    Raises:
        NotThisServer: `not_it`, naming `server`, when there is no `/version` or it holds no
            version string.
    """
    try:
        body = parse_json(await get(client, "/version"))
    except (HttpStatus, MalformedResponse):
        raise not_it(f"{client.base_url}: no {server} /version") from None
    version = body.get("version") if isinstance(body, dict) else None
    if not isinstance(version, str):
        raise not_it(f"{client.base_url}/version: not {server}'s answer")
    return version


async def first_model_card(
    client: httpx.AsyncClient, not_listed: type[SourceError]
) -> Mapping[str, Any]:
    """The first model card of `/v1/models`.

    Raises:
        SourceError: `not_listed` when the answer lists no model card; any failure to read
            `/v1/models`, typed (HttpStatus, MalformedResponse …).
    """
    body = parse_json(await get(client, "/v1/models"))
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise not_listed(f"{client.base_url}/v1/models: no model listed")
    card: Mapping[str, Any] = data[0]
    return card


def completions_payload(prompt: str, max_tokens: int, temperature: float = 0.0) -> dict[str, Any]:
    """The probe's request: greedy, `ignore_eos`, usage in every chunk (cumulative)."""
    return {
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }


@dataclass(frozen=True, slots=True)
class CompletionChunk:
    """One `data:` payload of a streamed `/v1/completions` answer: what it says of the tokens,
    the payload itself and its first choice ({} in the usage-only chunk) for the server's own
    fields."""

    update: ChunkUpdate
    body: Mapping[str, Any]
    choice: Mapping[str, Any]


def completion_chunk(data: str, server: str, usage_hint: str = "") -> CompletionChunk:
    """Decode one `data:` payload; `usage_hint` follows the complaint of a chunk without usage.

    Raises:
        StreamErrorEvent: The payload is the server's `{"error": …}`.
        MalformedResponse: Not a chunk of the expected shape (e.g. no per-chunk usage).
    """
    body = stream_json(data)
    usage = body.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    tokens = json_int(usage.get("completion_tokens"))
    if tokens is None:
        raise MalformedResponse(
            f"{server} sent a chunk without usage.completion_tokens{usage_hint}"
        )
    choices = body.get("choices")
    if not isinstance(choices, list):
        raise MalformedResponse(f"{server} stream chunk has no choices list")
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    reason = choice.get("finish_reason")
    update = ChunkUpdate(
        completion_tokens=tokens,
        prompt_tokens=json_int(usage.get("prompt_tokens")),
        # The usage-only chunk (no choices) closes the stream after the finishing one.
        finished=reason is not None or not choices,
        finish_reason=reason if isinstance(reason, str) else None,
        verify_ct=None,
        accept_length=None,
    )
    return CompletionChunk(update, body, choice)
