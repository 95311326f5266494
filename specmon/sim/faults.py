"""Misbehaviour the simulator can inject: what an on-call engineer meets on a sick server.

`Faults` is mutated at any time (tests flip faults on and off while a client is connected) and
applies to requests from then on. HTTP-level faults are answered by `intercept` (the server's
fault middleware), or applied to the real answer by `trickle`; stream faults by
`sse.stream_request`, `endless_stream` and `clock_jump_s` by the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from aiohttp import web

T = TypeVar("T")

HANG_POLL_S = 0.05
"""How often a hung request checks whether its client went away (then its handler ends)."""
FILLER_CHUNK = (b"# " + b"x" * 1021 + b"\n") * 1024
"""One MiB of Prometheus comment lines: what a `huge` answer is made of."""
TRICKLE_BYTES = 64
"""The size of each piece of a `trickle_s` answer."""


@dataclass
class Faults:
    """Misbehaviour to inject; paths are request paths ("/metrics") or "*" for every path.

    Attributes:
        hang: Paths that accept the request and never answer (until the client goes away or the
            server stops).
        delay_s: Path -> seconds to wait before answering (a slow or overloaded server).
        status: Path -> HTTP status returned instead of the real answer (401, 403, 500, 502 …).
        body: Path -> (content type, bytes) answered with status 200 instead of the real answer:
            malformed JSON or metrics, a proxy's HTML page, a wrong content type.
        huge: Path -> bytes of filler streamed (chunked, no Content-Length) instead of the answer.
        trickle_s: Path -> the real answer sent `TRICKLE_BYTES` at a time, this many seconds
            apart (a server or proxy alive but barely sending: no single read waits long).
        metrics_rewrite: Applied to the text of every /metrics answer (`nan_values`,
            `duplicate_series` …).
        drop_stream_after: Reset the connection after this many data chunks of a stream.
        stream_error_after: After this many data chunks send a mid-stream `{"error": ...}`
            chunk, then `[DONE]`.
        truncate_stream_after: End the stream cleanly after this many data chunks, without the
            final chunk or `[DONE]`.
        garbage_stream_after: After this many data chunks send a `data:` line that is not JSON.
        endless_stream: Generation ignores the requested length: streams never finish.
        buffer_stream: A stream's events are held back and sent together at its end (a
            buffering proxy in between).
        clock_jump_s: Added to every unix time the server reports (its wall clock jumped).
    """

    hang: set[str] = field(default_factory=set)
    delay_s: dict[str, float] = field(default_factory=dict)
    status: dict[str, int] = field(default_factory=dict)
    body: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    huge: dict[str, int] = field(default_factory=dict)
    trickle_s: dict[str, float] = field(default_factory=dict)
    metrics_rewrite: Callable[[str], str] | None = None
    drop_stream_after: int | None = None
    stream_error_after: int | None = None
    truncate_stream_after: int | None = None
    garbage_stream_after: int | None = None
    endless_stream: bool = False
    buffer_stream: bool = False
    clock_jump_s: float = 0.0

    def clear(self) -> None:
        """Back to a well-behaved server."""
        for name, value in vars(Faults()).items():
            setattr(self, name, value)

    def hangs(self, path: str) -> bool:
        """Whether requests to `path` hang."""
        return "*" in self.hang or path in self.hang

    def forced_status(self, path: str) -> int | None:
        """The status forced on `path`, if any."""
        return _for(self.status, path)


def _for(table: dict[str, T], path: str) -> T | None:
    return table.get(path, table.get("*"))


async def intercept(
    faults: Faults, request: web.Request, closing: asyncio.Event, hung: asyncio.Event
) -> web.StreamResponse | None:
    """The faulty answer to `request`, or None when it should be answered normally.

    Args:
        faults: What to inject.
        request: The request.
        closing: Set when the server stops (hung requests are released then).
        hung: Set when a request starts hanging (tests await it instead of sleeping).
    """
    path = request.path
    delay = _for(faults.delay_s, path)
    if delay:
        await asyncio.sleep(delay)
    if faults.hangs(path):
        hung.set()
        # Until the server stops or the client gives up: a handler per abandoned request would
        # otherwise pile up for as long as the fault lasts.
        while not closing.is_set() and request.transport is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(closing.wait(), HANG_POLL_S)
        if request.transport is not None:
            request.transport.abort()
        return web.Response(status=503)
    forced = faults.forced_status(path)
    if forced is not None:
        return _status_answer(forced)
    replaced = _for(faults.body, path)
    if replaced is not None:
        content_type, data = replaced
        return web.Response(body=data, headers={"Content-Type": content_type})
    size = _for(faults.huge, path)
    if size is not None:
        return await _filler(request, size)
    return None


def _status_answer(status: int) -> web.Response:
    """What SGLang (FastAPI, uvicorn) answers with this status."""
    if status == 404:
        return _json({"detail": "Not Found"}, 404)
    if status == 401:
        return _json({"error": "Unauthorized"}, 401)
    if status >= 500:
        return web.Response(
            text="Internal Server Error" if status == 500 else f"Simulated HTTP {status}",
            status=status,
            headers={"Content-Type": "text/plain; charset=utf-8"},
        )
    return _json({"error": f"Simulated HTTP {status}"}, status)


def _json(obj: object, status: int) -> web.Response:
    return web.Response(
        body=json.dumps(obj).encode(), status=status, headers={"Content-Type": "application/json"}
    )


async def _filler(request: web.Request, size: int) -> web.StreamResponse:
    """`size` bytes of comment lines, chunked, written as fast as the client reads them."""
    resp = web.StreamResponse(headers={"Content-Type": "text/plain; version=0.0.4"})
    try:
        await resp.prepare(request)  # a client that gave up waiting has closed already
        left = size
        while left > 0:
            chunk = FILLER_CHUNK[:left]
            await resp.write(chunk)
            left -= len(chunk)
        await resp.write_eof()
    except ConnectionError:
        pass  # the client refused the rest (what a size cap does) or stopped waiting
    return resp


async def trickle(
    faults: Faults, request: web.Request, resp: web.StreamResponse
) -> web.StreamResponse:
    """Send `resp` in small pieces, `trickle_s` apart, when the fault is on for its path."""
    every = _for(faults.trickle_s, request.path)
    if not every or not isinstance(resp, web.Response) or not isinstance(resp.body, bytes):
        return resp
    headers = {k: v for k, v in resp.headers.items() if k.lower() != "content-length"}
    slow = web.StreamResponse(status=resp.status, headers=headers)
    await slow.prepare(request)
    try:
        body = resp.body
        for start in range(0, len(body), TRICKLE_BYTES):
            await slow.write(body[start : start + TRICKLE_BYTES])
            await asyncio.sleep(every)
        await slow.write_eof()
    except ConnectionError:
        pass  # the client gave up
    return slow


def rewrite_metrics(faults: Faults, resp: web.StreamResponse) -> web.StreamResponse:
    """Apply `metrics_rewrite` to a /metrics answer (any backend's)."""
    rewrite = faults.metrics_rewrite
    if rewrite is None or not isinstance(resp, web.Response) or resp.body is None:
        return resp
    body = resp.body
    text = body.decode() if isinstance(body, bytes) else str(body)
    resp.body = rewrite(text).encode()
    return resp


_SAMPLE = re.compile(r"^(?P<series>[a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (?P<value>\S+)(?P<rest>.*)$")


def set_values(value: float) -> Callable[[str], str]:
    """A `metrics_rewrite` that sets every sample to `value` (NaN, +Inf, -Inf …)."""
    text_value = "NaN" if math.isnan(value) else repr(value).replace("inf", "Inf")

    def rewrite(text: str) -> str:
        return "\n".join(
            _SAMPLE.sub(lambda m: f"{m['series']} {text_value}{m['rest']}", line)
            for line in text.split("\n")
        )

    return rewrite


def duplicate_series(text: str) -> str:
    """A `metrics_rewrite` that writes every sample twice (a misconfigured multiprocess dir)."""
    return "\n".join(
        f"{line}\n{line}" if line and not line.startswith("#") else line
        for line in text.split("\n")
    )
