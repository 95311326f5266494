"""Server-sent event streams: pacing from the engine, framing like SGLang, faults on the way."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from specmon.sim.engine import Engine, SimRequest, StepOut

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"


@dataclass
class Faults:
    """Misbehaviour to inject; mutate it at any time, it applies to requests from then on.

    Attributes:
        hang: Paths that accept the request and never answer ("*" = every path).
        status: Path -> HTTP status returned instead of the real answer ("*" = every path).
        drop_stream_after: Close the connection after this many data chunks of a stream.
        stream_error_after: After this many data chunks send a mid-stream `{"error": ...}`
            chunk, then `[DONE]`.
    """

    hang: set[str] = field(default_factory=set)
    status: dict[str, int] = field(default_factory=dict)
    drop_stream_after: int | None = None
    stream_error_after: int | None = None

    def clear(self) -> None:
        """Back to a well-behaved server."""
        self.hang.clear()
        self.status.clear()
        self.drop_stream_after = None
        self.stream_error_after = None

    def hangs(self, path: str) -> bool:
        """Whether requests to `path` hang."""
        return "*" in self.hang or path in self.hang

    def forced_status(self, path: str) -> int | None:
        """The status forced on `path`, if any."""
        return self.status.get(path, self.status.get("*"))


def dumps(obj: object) -> str:
    """Compact JSON, like SGLang's orjson output."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def json_response(obj: object, status: int = 200) -> web.Response:
    """A JSON response with FastAPI's content type."""
    return web.Response(
        body=dumps(obj).encode(), status=status, headers={"Content-Type": JSON_CONTENT_TYPE}
    )


def abort_connection(request: web.Request) -> None:
    """Drop the TCP connection without finishing the response (a crash, as clients see it)."""
    transport = request.transport
    if transport is not None:
        transport.abort()


Render = Callable[[StepOut, bool], list[dict[str, Any]]]


async def stream_request(
    request: web.Request,
    engine: Engine,
    req: SimRequest,
    faults: Faults,
    render: Render,
    error_payload: dict[str, Any],
    tail: Callable[[], list[dict[str, Any]]] = list,
    *,
    done: bool = True,
) -> web.StreamResponse:
    """Stream `req`'s outputs as `data:` chunks, then `tail()` chunks and `[DONE]`.

    Args:
        request: The HTTP request.
        engine: The engine running `req` (already submitted).
        req: The request.
        faults: Faults to apply (drop / mid-stream error after N data chunks).
        render: Turns one engine output into chunk payloads (`first` marks the first output).
        error_payload: The mid-stream error chunk of this version.
        tail: Payloads sent after the final output (usage, spec details).
        done: End with `data: [DONE]` (llama.cpp's native stream does not).

    Returns:
        The (already written) response.
    """
    resp = web.StreamResponse(headers={"Content-Type": SSE_CONTENT_TYPE})
    await resp.prepare(request)
    loop_time = engine.now
    sent = 0
    first = True
    try:
        while True:
            out = await req.outbox.get()
            if out is None:  # server shutting down
                abort_connection(request)
                return resp
            rec = req.record
            prev = rec.chunk_completion_tokens[-1] if rec.chunk_completion_tokens else 0
            rec.chunk_tokens.append(out.completion_tokens - prev)
            rec.chunk_completion_tokens.append(out.completion_tokens)
            rec.chunk_deadlines.append(out.deadline)
            rec.chunk_send_mono.append(loop_time())
            rec.chunk_send_wall.append(time.time())
            for payload in render(out, first):
                await resp.write(b"data: " + dumps(payload).encode() + b"\n\n")
                sent += 1
                if faults.drop_stream_after is not None and sent >= faults.drop_stream_after:
                    engine.abort(req)
                    abort_connection(request)
                    return resp
                if faults.stream_error_after is not None and sent >= faults.stream_error_after:
                    engine.abort(req)
                    await resp.write(b"data: " + dumps(error_payload).encode() + b"\n\n")
                    await resp.write(b"data: [DONE]\n\n")
                    await resp.write_eof()
                    return resp
            first = False
            if out.finished:
                break
        for payload in tail():
            await resp.write(b"data: " + dumps(payload).encode() + b"\n\n")
        if done:
            await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
    except ConnectionError:
        # The client went away mid-stream: SGLang aborts the request.
        engine.abort(req)
    return resp
