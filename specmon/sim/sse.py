"""Server-sent event streams: pacing from the engine, framing like SGLang, faults on the way."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from specmon.sim.engine import Engine, SimRequest, StepOut
from specmon.sim.faults import Faults

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"


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
    over: Callable[[], None] | None = None,
) -> web.StreamResponse:
    """Stream `req`'s outputs as `data:` chunks, then `tail()` chunks and `[DONE]`.

    Args:
        request: The HTTP request.
        engine: The engine running `req` (already submitted).
        req: The request.
        faults: Faults to apply (drop, error, garbage or a clean end after N data chunks).
        render: Turns one engine output into chunk payloads (`first` marks the first output).
        error_payload: The mid-stream error chunk of this version.
        tail: Payloads sent after the final output (usage, spec details).
        done: End with `data: [DONE]` (llama.cpp's native stream does not).
        over: Called once the last output is sent, before the tail: the request's ground truth
            is stored before the client can read the stream's end.

    Returns:
        The (already written) response.
    """
    resp = web.StreamResponse(headers={"Content-Type": SSE_CONTENT_TYPE})
    held: list[bytes] | None = [] if faults.buffer_stream else None

    async def write(data: bytes) -> None:
        """Send at once, or hold until the end as a buffering proxy does (`buffer_stream`)."""
        if held is None:
            await resp.write(data)
        else:
            held.append(data)

    loop_time = engine.now
    sent = 0
    first = True
    try:
        await resp.prepare(request)  # the client may be gone already: as mid-stream, below
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
                await write(b"data: " + dumps(payload).encode() + b"\n\n")
                sent += 1
                fault = _stream_fault(faults, sent)
                if fault == "garbage":
                    await resp.write(b"data: {not json\n\n")
                elif fault is not None:
                    engine.abort(req)
                    if fault == "drop":
                        abort_connection(request)
                        return resp
                    if fault == "error":
                        await resp.write(b"data: " + dumps(error_payload).encode() + b"\n\n")
                        await resp.write(b"data: [DONE]\n\n")
                    await resp.write_eof()  # "truncate": a clean end, too early
                    return resp
            first = False
            if out.finished:
                break
        if over is not None:
            over()
        for payload in tail():
            await write(b"data: " + dumps(payload).encode() + b"\n\n")
        if done:
            await write(b"data: [DONE]\n\n")
        if held:
            await resp.write(b"".join(held))
        await resp.write_eof()
    except ConnectionError:
        # The client went away (before the headers or mid-stream): SGLang aborts the request.
        engine.abort(req)
    return resp


def _stream_fault(faults: Faults, sent: int) -> str | None:
    """The stream fault due after `sent` data chunks: "drop", "error", "truncate", "garbage"."""
    due = (
        ("drop", faults.drop_stream_after),
        ("error", faults.stream_error_after),
        ("truncate", faults.truncate_stream_after),
        ("garbage", faults.garbage_stream_after),
    )
    return next((name for name, after in due if after is not None and sent >= after), None)
