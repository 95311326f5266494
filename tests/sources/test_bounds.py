"""The HTTP layer's bounds: however a server misbehaves, a read ends, in bounded memory, with a
typed one-line error — and no error repeats the API key a server echoed."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator

import httpx
import pytest

from specmon.errors import (
    HttpStatus,
    MalformedResponse,
    ProbeError,
    ResponseTooLarge,
    TimedOut,
)
from specmon.sources.http import get, make_client
from specmon.sources.probe import MAX_EVENT_BYTES, requested_tokens, run_probe
from specmon.target import ApiKey, Target


def _client(handler: httpx.MockTransport, *, read: float = 5.0) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=handler, base_url="http://s", timeout=read)


async def test_a_declared_size_over_the_limit_is_refused_before_reading() -> None:
    read: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        read.append(1)
        yield b"x"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-length": str(10**9)}, content=body())

    async with _client(httpx.MockTransport(handler)) as client:
        with pytest.raises(
            ResponseTooLarge,
            match=r"http://s/metrics: the answer is larger "
            r"than 16 MiB; refused without reading it all",
        ):
            await get(client, "/metrics")
    assert read == []


async def test_an_undeclared_size_is_cut_at_the_limit() -> None:
    sent: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        for _ in range(100):
            sent.append(1)
            yield b"#" * 2**20

    handler = httpx.MockTransport(lambda request: httpx.Response(200, content=body()))
    async with _client(handler) as client:
        with pytest.raises(ResponseTooLarge):
            await get(client, "/metrics", limit=4 * 2**20)
    assert len(sent) == 5  # it stopped reading just past the limit


async def test_a_compressed_body_is_limited_after_decoding() -> None:
    bomb = gzip.compress(b"#" * 8 * 2**20)  # 8 KB on the wire, 8 MiB decoded
    handler = httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-encoding": "gzip"}, content=bomb)
    )
    async with _client(handler) as client:
        with pytest.raises(ResponseTooLarge):
            await get(client, "/metrics", limit=2**20)
        response = await get(client, "/metrics")  # under the limit: decoded, re-readable
    assert response.content == b"#" * 8 * 2**20
    assert "content-encoding" not in response.headers


async def test_a_body_that_does_not_decode_is_malformed() -> None:
    handler = httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-encoding": "gzip"}, content=b"no")
    )
    async with _client(handler) as client:
        with pytest.raises(MalformedResponse, match="cannot be decoded"):
            await get(client, "/metrics")


async def test_an_echoed_key_is_masked_in_error_messages() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text=f"bad request: {request.headers['authorization']}")

    target = Target("http://s", ApiKey("sk-echoed-secret", "test"))
    async with make_client(target) as client:
        client._transport = httpx.MockTransport(handler)
        with pytest.raises(HttpStatus) as info:
            await get(client, "/server_info")
    assert str(info.value) == "http://s/server_info: HTTP 500 bad request: Bearer ***"


def _stream(lines: list[bytes]) -> httpx.MockTransport:
    async def body() -> AsyncIterator[bytes]:
        for line in lines:
            yield line

    headers = {"content-type": "text/event-stream"}
    return httpx.MockTransport(lambda request: httpx.Response(200, headers=headers, content=body()))


def _chunk(tokens: int, finished: bool = False) -> bytes:
    reason = '{"type": "length"}' if finished else "null"
    return b'data: {"meta_info": {"completion_tokens": %d, "finish_reason": %s}}\n\n' % (
        tokens,
        reason.encode(),
    )


async def test_a_stream_that_never_stops_is_cut_off_past_the_tokens_asked_for() -> None:
    async def endless() -> AsyncIterator[bytes]:
        tokens = 0
        while True:
            tokens += 1
            yield _chunk(tokens)

    headers = {"content-type": "text/event-stream"}
    handler = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=headers, content=endless())
    )
    async with _client(handler) as client:
        with pytest.raises(ProbeError, match=r"ran past the 50 tokens asked for \(67\); cut off"):
            await run_probe(client, max_tokens=50)


async def test_keepalives_without_tokens_time_out() -> None:
    """Comment lines keep the connection busy but bring nothing: the read timeout still ends it."""

    async def keepalive() -> AsyncIterator[bytes]:
        yield _chunk(1)
        while True:
            await asyncio.sleep(0.01)  # the fake server's pace, not the test waiting
            yield b": ping\n\n"

    headers = {"content-type": "text/event-stream"}
    handler = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=headers, content=keepalive())
    )
    async with _client(handler, read=0.2) as client:
        with pytest.raises(TimedOut, match=r"no new token for 0\.2 s .* after 1 tokens"):
            await run_probe(client, max_tokens=50)


async def test_an_endless_line_is_refused() -> None:
    async def endless_line() -> AsyncIterator[bytes]:
        yield b"data: {"
        while True:
            yield b"x" * 2**20

    headers = {"content-type": "text/event-stream"}
    handler = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=headers, content=endless_line())
    )
    async with _client(handler) as client:
        with pytest.raises(ResponseTooLarge, match="without a complete stream event"):
            await run_probe(client, max_tokens=50)


async def test_a_normal_stream_is_untouched_by_the_bounds() -> None:
    lines = [_chunk(i) for i in range(1, 50)] + [_chunk(50, finished=True), b"data: [DONE]\n\n"]
    async with _client(_stream(lines)) as client:
        result = await run_probe(client, max_tokens=50)
    assert result.chunks[-1].completion_tokens == 50
    assert 1000 * len(lines[0]) < MAX_EVENT_BYTES


@pytest.mark.parametrize(
    ("payload", "tokens"),
    [
        ({"sampling_params": {"max_new_tokens": 7}}, 7),  # SGLang
        ({"max_tokens": 8}, 8),  # OpenAI, vLLM
        ({"n_predict": 9}, 9),  # llama.cpp
    ],
)
def test_requested_tokens_under_each_backends_name(payload: dict[str, object], tokens: int) -> None:
    assert requested_tokens(payload) == tokens
