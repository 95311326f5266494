"""The probe: one streaming native `/generate` request, timed chunk by chunk (the SSE loop,
`stream_probe`, is shared by every backend's probe).

Tokens are counted with the cumulative `meta_info.completion_tokens`, never by chunks or
`output_ids` (SGLang coalesces chunks, and 0.5.1–0.5.4 sent `output_ids` as deltas).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from specmon.errors import (
    MalformedResponse,
    ProbeError,
    StreamErrorEvent,
    StreamTruncated,
    TimedOut,
)
from specmon.model import ProbeChunk, ProbeResult, ServerMetrics
from specmon.nesting import loads_json
from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.sources.http import check_status, describe_transport_error, json_float, stream
from specmon.sources.sse import EventReader

STREAM_TOKEN_MARGIN = 16
"""Tokens past the requested length a stream may carry before it is cut off."""
MAX_EVENT_BYTES = 16 * 2**20
"""The most bytes read between two stream events (a legitimate chunk is a few KB)."""
_SSE_HEADERS = {"Accept": "text/event-stream", "Cache-Control": "no-store"}


@dataclass(frozen=True, slots=True)
class ChunkUpdate:
    """What one `data:` payload of the stream says."""

    completion_tokens: int
    prompt_tokens: int | None
    finished: bool
    finish_reason: str | None
    verify_ct: int | None
    accept_length: float | None
    histogram: tuple[int, ...] | None = None
    """SGLang's per-request histogram of drafts accepted per verify step (final chunk)."""


# Where SGLang's final meta_info puts the histogram of drafts accepted per verify step, newest
# name first: 0.5.12+ `spec_correct_drafts_histogram` (0.5.12–0.5.20 repeat it under the old
# name), 0.5.9–0.5.11 `spec_accept_histogram`; older versions send none.
HISTOGRAM_KEYS = ("spec_correct_drafts_histogram", "spec_accept_histogram")


def histogram_of(value: object) -> tuple[int, ...] | None:
    """A per-request histogram of drafts accepted per step as sent (a non-empty list of counts),
    else None."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value)
    ):
        return tuple(value)
    return None


def _histogram(meta: dict[str, Any]) -> tuple[int, ...] | None:
    for key in HISTOGRAM_KEYS:
        if (found := histogram_of(meta.get(key))) is not None:
            return found
    return None


def generate_payload(prompt: str, max_tokens: int, temperature: float = 0.0) -> dict[str, Any]:
    """The request body: only sampling params every SGLang version knows."""
    params = {"max_new_tokens": max_tokens, "temperature": temperature, "ignore_eos": True}
    return {
        "text": prompt,
        "sampling_params": params,
        "stream": True,
    }


def _number(meta: dict[str, Any], key: str) -> float | None:
    return json_float(meta.get(key))  # NaN, infinities, 1e308: unknown


def stream_json(data: str) -> dict[str, Any]:
    """One SSE `data:` payload as a JSON object (every backend streams JSON objects).

    Raises:
        StreamErrorEvent: The payload is the server's `{"error": …}`.
        MalformedResponse: The payload is not a JSON object.
    """
    try:
        body = loads_json(data)
    except ValueError:  # nested too deep included (`nesting.TooDeep`)
        raise MalformedResponse(f"stream chunk is not JSON: {data[:80]!r}") from None
    if not isinstance(body, dict):
        raise MalformedResponse(f"stream chunk is not an object: {data[:80]!r}")
    if "error" in body:
        error = body["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise StreamErrorEvent(f"the server reported an error mid-stream: {message}")
    return body


_META_KEY = '"meta_info":'
_JSON = json.JSONDecoder()


def _meta_info(data: str) -> dict[str, Any] | None:
    """The `meta_info` object that ends a native chunk, read alone; None when the chunk is not
    of that shape (it is then read whole).

    SGLang repeats the text and its token ids so far in every chunk: at 256 tokens ~1.8 KB, of
    which `meta_info` is the last ~0.7 KB. Outside a JSON string the key cannot appear in a
    string's text (its quotes would be escaped), so the last one is the top-level key when the
    object read from it closes the chunk. A chunk that names an `"error":` is read whole.
    """
    at = data.rfind(_META_KEY)
    if at < 0 or not data.startswith("{") or '"error":' in data:
        return None
    start = at + len(_META_KEY)
    start += len(data[start : start + 8]) - len(data[start : start + 8].lstrip())
    try:
        meta, end = _JSON.raw_decode(data, start)
    except (ValueError, RecursionError):  # read whole then: `stream_json` says what it is
        return None
    return meta if isinstance(meta, dict) and data[end:].strip() == "}" else None


def parse_chunk(data: str) -> ChunkUpdate:
    """Decode one SSE `data:` payload of a native `/generate` stream.

    Raises:
        StreamErrorEvent: The payload is the server's `{"error": …}`.
        MalformedResponse: The payload is not a chunk of the expected shape.
    """
    meta = _meta_info(data)
    if meta is None:
        meta = stream_json(data).get("meta_info")
    if not isinstance(meta, dict):
        raise MalformedResponse("stream chunk has no meta_info")
    tokens = meta.get("completion_tokens")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise MalformedResponse("stream chunk has no valid meta_info.completion_tokens")
    reason = meta.get("finish_reason")
    if isinstance(reason, dict):
        reason_text = reason.get("type")
        reason = reason_text if isinstance(reason_text, str) else "unknown"
    elif reason is not None and not isinstance(reason, str):
        reason = "unknown"
    prompt_tokens = _number(meta, "prompt_tokens")
    verify_ct = _number(meta, "spec_verify_ct")
    return ChunkUpdate(
        completion_tokens=tokens,
        prompt_tokens=int(prompt_tokens) if prompt_tokens is not None else None,
        finished=reason is not None,
        finish_reason=reason,
        verify_ct=int(verify_ct) if verify_ct is not None else None,
        accept_length=_number(meta, "spec_accept_length"),
        histogram=_histogram(meta),
    )


class _Collector:
    """Accumulates chunk updates into a ProbeResult."""

    def __init__(self, sent_at: float) -> None:
        self.sent_at = sent_at
        self.chunks: list[ProbeChunk] = []
        self.last: ChunkUpdate | None = None
        self.prompt_tokens: int | None = None
        self.verify_ct: int | None = None
        self.finish_reason: str | None = None
        self.histogram: tuple[int, ...] | None = None
        self.accept_length: float | None = None

    def add(self, update: ChunkUpdate, t: float) -> bool:
        """Take one update read at `t`; True when it brought new tokens."""
        previous = self.chunks[-1].completion_tokens if self.chunks else 0
        if update.completion_tokens < previous:
            raise MalformedResponse(
                f"completion_tokens went down in the stream ({previous} -> "
                f"{update.completion_tokens})"
            )
        grew = update.completion_tokens > previous
        if grew:
            self.chunks.append(ProbeChunk(t, update.completion_tokens))
        if update.prompt_tokens is not None:
            self.prompt_tokens = update.prompt_tokens
        if update.verify_ct is not None:  # 0.4.3 sent it in every chunk; later only at the end
            self.verify_ct = update.verify_ct
        if update.histogram is not None:
            self.histogram = update.histogram
        if update.accept_length is not None:  # TensorRT-LLM's runs in every chunk but the usage one
            self.accept_length = update.accept_length
        if update.finish_reason is not None:  # OpenAI streams close with a usage-only chunk
            self.finish_reason = update.finish_reason
        self.last = update
        return grew

    def result(self) -> ProbeResult:
        last = self.last
        if last is None or not last.finished:
            got = self.chunks[-1].completion_tokens if self.chunks else 0
            raise StreamTruncated(f"the stream ended before its final chunk ({got} tokens seen)")
        if not self.chunks:
            raise MalformedResponse("the stream finished without producing a token")
        return ProbeResult(
            sent_at=self.sent_at,
            chunks=tuple(self.chunks),
            prompt_tokens=self.prompt_tokens,
            verify_ct=self.verify_ct if self.verify_ct else None,
            server_accept_length=self.accept_length or None,
            finish_reason=self.finish_reason,
            accepted_histogram=self.histogram,
        )


async def run_probe(
    client: httpx.AsyncClient,
    *,
    prompt: str = DEFAULT_PROMPT,
    max_tokens: int = 500,
    temperature: float = 0.0,
    clock: Callable[[], float] = time.perf_counter,
    wall: Callable[[], float] = time.time,
    scrape: Callable[[], Awaitable[ServerMetrics]] | None = None,
) -> ProbeResult:
    """Send one streaming generation and time every chunk as it arrives.

    Args:
        client: The target's client.
        prompt: The prompt text (fixed per protocol).
        max_tokens: `max_new_tokens`; `ignore_eos` makes the server produce all of them.
        temperature: Sampling temperature (0: greedy, the default).
        clock: Monotonic clock for chunk times (injected by tests).
        wall: Wall clock for the send time.
        scrape: Not used: SGLang's stream carries the request's own steps (the vLLM and
            llama.cpp probes read `/metrics` around themselves through it).

    Raises:
        SourceError: Typed: unreachable, timed out, auth, HTTP status, mid-stream error,
            truncated stream, malformed chunk.
    """
    payload = generate_payload(prompt, max_tokens, temperature)
    return await stream_probe(client, "/generate", payload, parse_chunk, clock=clock, wall=wall)


async def stream_probe(
    client: httpx.AsyncClient,
    path: str,
    payload: dict[str, Any],
    parse: Callable[[str], ChunkUpdate],
    *,
    clock: Callable[[], float],
    wall: Callable[[], float],
) -> ProbeResult:
    """POST a streaming request and time every SSE `data:` payload that `parse` reads.

    Every backend's probe is this loop with its own path, payload and chunk parser. However the
    server misbehaves, the loop ends: a stream that brings no new token for the read timeout
    (keep-alives only, or nothing) times out, one that runs past the requested length is cut
    off, and no more than `MAX_EVENT_BYTES` are read between two events.

    Raises:
        SourceError: Typed, as `run_probe`.
    """
    url = f"{client.base_url}{path}"
    collector = _Collector(wall())
    most = requested_tokens(payload) + STREAM_TOKEN_MARGIN
    stall_s = client.timeout.read
    events = EventReader(url, MAX_EVENT_BYTES)
    t0 = clock()
    try:
        async with stream(client, "POST", path, body=payload, headers=_SSE_HEADERS) as answer:
            if answer.status >= 400:
                body = b"".join([chunk async for chunk in answer.chunks])
                check_status(
                    httpx.Response(
                        answer.status,
                        headers=answer.raw_headers,
                        content=body,
                        request=answer.request,
                    )
                )
            if "text/event-stream" not in answer.content_type.partition(";")[0]:
                raise MalformedResponse(
                    f"{url}: not an event stream (Content-Type {answer.content_type!r})"
                )
            last_token = 0.0  # a stream that brings no new token for the read timeout stalled
            async for chunk in answer.chunks:
                t = clock() - t0  # when these bytes arrived
                for data in events.feed(chunk):
                    if data == "[DONE]":
                        return collector.result()
                    if not data:
                        continue
                    update = parse(data)
                    if update.completion_tokens > most:
                        raise ProbeError(
                            f"{url}: the stream ran past the {most - STREAM_TOKEN_MARGIN} "
                            f"tokens asked for ({update.completion_tokens}); cut off"
                        )
                    if collector.add(update, t):
                        last_token = t
                if stall_s is not None and t - last_token > stall_s:
                    got = collector.chunks[-1].completion_tokens if collector.chunks else 0
                    raise TimedOut(
                        f"{url}: no new token for {stall_s:g} s (the read timeout) after {got} "
                        "tokens"
                    )
    except httpx.TimeoutException as exc:
        if collector.chunks:
            raise TimedOut(
                f"{url}: the stream stalled after {collector.chunks[-1].completion_tokens} tokens"
            ) from None
        raise describe_transport_error(exc, url) from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        if collector.last is None:
            raise describe_transport_error(exc, url) from None
        raise StreamTruncated(
            f"{url}: the connection dropped mid-stream after "
            f"{collector.chunks[-1].completion_tokens if collector.chunks else 0} tokens"
        ) from None
    except httpx.TransportError as exc:
        raise describe_transport_error(exc, url) from None
    except httpx.DecodingError as exc:
        raise MalformedResponse(f"{url}: the stream cannot be decoded ({exc})") from None
    # A missing [DONE] is tolerated once the final chunk (finish_reason set) has arrived.
    return collector.result()


def requested_tokens(payload: dict[str, Any]) -> int:
    """The length a generation request asks for, under any backend's name for it.

    SGLang's `sampling_params.max_new_tokens`, OpenAI's (vLLM's) `max_tokens`, llama.cpp's
    `n_predict`; `STREAM_TOKEN_MARGIN`-bounded streams rest on it.
    """
    params = payload.get("sampling_params")
    candidates = (
        params.get("max_new_tokens") if isinstance(params, dict) else None,
        payload.get("max_tokens"),
        payload.get("n_predict"),
    )
    for value in candidates:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    raise ValueError(f"no requested length in the payload: {sorted(payload)}")
