"""A hostile SGLang server: the simulator's real endpoints (server info, /metrics, /v1/models,
/generate streaming, /health …) with the nastiest answers a server can give, one `Hostility`
at a time (issue 36).

`HostileServer` is `SimServer` with one more layer in front of its own faults: it rewrites
server info's JSON (every string, every number, nesting), answers any path with raw bytes
(invalid UTF-8, redirects, 4xx/5xx with bodies), and streams `/generate` chunks of its own
making (escape bytes in the text, numbers past a float, nesting). The simulator's `Faults`
(hangs, trickles, oversized and endless bodies, /metrics rewrites) stay available beside it.
`CASES` names each nasty input; the tests drive every surface with each.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from specmon.sim import SimConfig
from specmon.sim.server import SimServer
from specmon.sim.thread import SimThread

Handler = Callable[[web.Request], Any]

ESCAPES = "\x1b]0;pwned\x07\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\\x1b[2J\x1b[31m\x9b1m\r\x00"
"""Terminal escapes and control bytes: a window title (OSC 0), a link (OSC 8), a clear screen,
a colour, a C1 CSI, a carriage return, a NUL."""
DEEP = 5_000
"""Nesting far past Python's recursion limit."""
FAST = SimConfig(
    plain_step_ms=1.0,
    cycle_ms=2.0,
    accept_length=2.1,
    ttft_ms=2.0,
    prefill_ms_per_token=0.0,
    seed=7,
    speculative_algorithm="EAGLE3",
)
INFO_PATHS = ("/server_info", "/get_server_info")


@dataclass
class Raw:
    """An answer of raw bytes."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Hostility:
    """What the hostile layer does (none of it by default: the simulator answers).

    Attributes:
        info: Rewrites server info's JSON object (any JSON value may come back); `INFO_PATHS`,
            /get_model_info and /v1/models go through it too.
        raw: Path ("*" for all) -> the raw answer given instead.
        stream: Makes the `data:` payloads of a `/generate` stream from the tokens asked for.
    """

    info: Callable[[Any], Any] | None = None
    raw: dict[str, Raw] = field(default_factory=dict)
    stream: Callable[[int], list[str]] | None = None


class HostileServer(SimServer):
    """`SimServer` whose answers `hostility` rewrites (set it before or while serving)."""

    def __init__(self, config: SimConfig = FAST) -> None:
        super().__init__(config)
        self.hostility = Hostility()

    @web.middleware
    async def _fault_layer(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        hostility = self.hostility
        raw = hostility.raw.get(request.path, hostility.raw.get("*"))
        if raw is not None:
            return web.Response(
                status=raw.status,
                body=raw.body,
                headers={"Content-Type": raw.content_type, **raw.headers},
            )
        if hostility.stream is not None and request.path == "/generate":
            return await _stream(request, hostility.stream)
        resp: web.StreamResponse = await super()._fault_layer(request, handler)
        rewrite = hostility.info
        json_paths = (*INFO_PATHS, "/get_model_info", "/model_info", "/v1/models")
        if rewrite is not None and request.path in json_paths and isinstance(resp, web.Response):
            assert isinstance(resp.body, bytes)
            body = rewrite(json.loads(resp.body))
            resp.body = body if isinstance(body, bytes) else json.dumps(body).encode()
        return resp


async def _stream(request: web.Request, make: Callable[[int], list[str]]) -> web.StreamResponse:
    body = await request.json()
    tokens = int(body.get("sampling_params", {}).get("max_new_tokens", 16))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8"})
    await resp.prepare(request)
    for payload in make(tokens):
        await resp.write(f"data: {payload}\n\n".encode())
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


# ---------------------------------------------------------------- rewrites


def every_string(value: Any, new: Callable[[str], Any]) -> Any:
    """`value` with every string (keys kept) replaced by `new(string)`."""
    if isinstance(value, dict):
        return {k: every_string(v, new) for k, v in value.items()}
    if isinstance(value, list):
        return [every_string(v, new) for v in value]
    return new(value) if isinstance(value, str) else value


def every_number(value: Any, number: float | int) -> Any:
    """`value` with every number (not booleans) replaced by `number`."""
    if isinstance(value, dict):
        return {k: every_number(v, number) for k, v in value.items()}
    if isinstance(value, list):
        return [every_number(v, number) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return number
    return value


def nested(depth: int, inner: Any = 1) -> Any:
    """`inner` inside `depth` lists (built without recursion)."""
    for _ in range(depth):
        inner = [inner]
    return inner


_SAMPLE = re.compile(r"^(?P<series>[a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (?P<value>\S+)(?P<rest>.*)$")


def set_series(name: str, value: str) -> Callable[[str], str]:
    """A `/metrics` rewrite setting every sample of one family (full name) to `value`."""

    def rewrite(text: str) -> str:
        out = []
        for line in text.split("\n"):
            m = _SAMPLE.match(line)
            if m and re.match(re.escape(name) + r"(\{|$)", m["series"]):
                line = f"{m['series']} {value}{m['rest']}"
            out.append(line)
        return "\n".join(out)

    return rewrite


def set_all(value: str) -> Callable[[str], str]:
    """A `/metrics` rewrite setting every sample to `value` (`"1e308"`, `"-Inf"` …)."""
    return lambda text: "\n".join(
        _SAMPLE.sub(lambda m: f"{m['series']} {value}{m['rest']}", line)
        for line in text.split("\n")
    )


def backwards() -> Callable[[str], str]:
    """A `/metrics` rewrite whose counters (`_total`, `_count`, `_sum`, `_bucket`) go down at
    every scrape: the nth scrape divides them by n + 1."""
    scrapes = [0]

    def rewrite(text: str) -> str:
        scrapes[0] += 1
        out = []
        for line in text.split("\n"):
            m = _SAMPLE.match(line)
            if m and re.search(r"_(total|count|sum|bucket)(\{|$)", m["series"]):
                try:
                    number = float(m["value"]) / (scrapes[0] + 1)
                except ValueError:
                    number = math.nan
                line = f"{m['series']} {number!r}{m['rest']}"
            out.append(line)
        return "\n".join(out)

    return rewrite


def label_escapes(text: str) -> str:
    """A `/metrics` rewrite putting escapes (as the text format escapes them) in every label."""
    nasty = ESCAPES.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return re.sub(r'="([^"]*)"', lambda m: f'="{m[1]}{nasty}"', text)


def chunks(text: str, number: float | None, depth: int = 0) -> Callable[[int], list[str]]:
    """A `/generate` stream: `tokens` chunks of `text`, their meta_info's numbers (all but the
    token counts) set to `number` when given, the last one's `extra` nested `depth` deep."""

    def make(tokens: int) -> list[str]:
        payloads = []
        for i in range(1, tokens + 1):
            meta: dict[str, Any] = {
                "id": text,
                "completion_tokens": i,
                "prompt_tokens": 12,
                "spec_verify_ct": max(1, i // 2),
                "finish_reason": {"type": "length", "length": tokens} if i == tokens else None,
                "e2e_latency": 0.01 * i,
                "cached_tokens": 0,
            }
            if number is not None:
                meta.update(prompt_tokens=number, e2e_latency=number, cached_tokens=number)
            chunk: dict[str, Any] = {"text": text * i, "output_ids": [1] * i, "meta_info": meta}
            payload = json.dumps(chunk)
            if depth and i == tokens:  # written out: json.dumps recurses too
                payload = f'{{"extra": {"[" * depth}{"]" * depth}, {payload[1:]}'
            payloads.append(payload)
        return payloads

    return make


def _info(rewrite: Callable[[Any], Any]) -> Callable[[HostileServer], None]:
    def apply(server: HostileServer) -> None:
        server.hostility.info = rewrite

    return apply


def _metrics(rewrite: Callable[[str], str]) -> Callable[[HostileServer], None]:
    def apply(server: HostileServer) -> None:
        server.faults.metrics_rewrite = rewrite

    return apply


def _raw(paths: tuple[str, ...], answer: Raw) -> Callable[[HostileServer], None]:
    def apply(server: HostileServer) -> None:
        server.hostility.raw.update(dict.fromkeys(paths, answer))

    return apply


def _stream_of(make: Callable[[int], list[str]]) -> Callable[[HostileServer], None]:
    def apply(server: HostileServer) -> None:
        server.hostility.stream = make

    return apply


def _deep_text(depth: int) -> bytes:
    return b'{"a":' + b"[" * depth + b"]" * depth + b"}"


@dataclass(frozen=True)
class Case:
    """One nasty input and how the server must be seen through it."""

    name: str
    apply: Callable[[HostileServer], None]
    reachable: bool
    """specmon can read the server's info (False: `check` exits 2, nothing more is read)."""
    crash_on_main: bool = False
    """One of the two inputs that crashed specmon before issue 36."""


_BAD_UTF8 = b'{"version": "0.5.17\xff\xfe", "model_path": "m\xc3\x28"}'
CASES = (
    Case(
        "server info nested 5,000 deep",
        _raw(INFO_PATHS, Raw(200, _deep_text(DEEP))),
        reachable=False,
        crash_on_main=True,
    ),
    Case("server info nested 500 deep", _info(lambda v: {**v, "x": nested(500)}), False),
    Case(
        "server info 200,000 keys wide",
        _info(lambda v: {**v, **{f"k{i}": i for i in range(200_000)}}),
        True,
    ),
    Case(
        "escapes in every server-info string",
        _info(lambda v: every_string(v, lambda s: s + ESCAPES)),
        True,
    ),
    Case("server info numbers 1e308", _info(lambda v: every_number(v, 1e308)), True),
    Case("server info integers of 4,000 digits", _info(lambda v: every_number(v, 10**3999)), True),
    Case(
        "server info strings are numbers", _info(lambda v: every_string(v, lambda s: 1e308)), True
    ),
    Case("server info invalid UTF-8", _raw(INFO_PATHS, Raw(200, _BAD_UTF8)), False),
    Case(
        "spec_num_draft_tokens 1e308",
        _metrics(set_series("sglang:spec_num_draft_tokens", "1e308")),
        True,
        crash_on_main=True,
    ),
    Case("every series 1e308", _metrics(set_all("1e308")), True),
    Case("every series -1e308", _metrics(set_all("-1e308")), True),
    Case("every series -Inf", _metrics(set_all("-Inf")), True),
    Case("counters going backwards", _metrics(backwards()), True),
    Case("escapes in every label", _metrics(label_escapes), True),
    Case(
        "/metrics invalid UTF-8",
        _raw(("/metrics",), Raw(200, b'sglang:num_running_reqs{m="\xff"} 1\n', "text/plain")),
        True,
    ),
    Case(
        "redirect everywhere",
        _raw(("*",), Raw(302, b"", "text/plain", {"Location": "http://127.0.0.1:9/x"})),
        False,
    ),
    Case(
        "500 with escapes and invalid UTF-8 in its body",
        _raw(("*",), Raw(500, ESCAPES.encode() + b"\xff\xfe" + b"x\n" * 400, "text/plain")),
        False,
    ),
    Case(
        "404 /generate with a JSON error of escapes",
        _raw(("/generate",), Raw(404, json.dumps({"detail": ESCAPES}).encode())),
        True,
    ),
    Case("stream text of escapes", _stream_of(chunks(ESCAPES, None)), True),
    Case("stream numbers 1e308", _stream_of(chunks("x", 1e308)), True),
    Case("stream numbers NaN", _stream_of(chunks("x", math.nan)), True),
    Case("stream chunk nested 5,000 deep", _stream_of(chunks("x", None, DEEP)), True),
)
IDS = [case.name for case in CASES]


class HostileThread(SimThread):
    """A `HostileServer` in a background thread (`SimThread`'s), `case` applied."""

    def __init__(self, case: Case | None = None, config: SimConfig = FAST) -> None:
        super().__init__(config)
        self.case = case

    def __enter__(self) -> HostileThread:
        self._thread.start()

        async def boot() -> SimServer:
            server = HostileServer(self.config)
            if self.case is not None:
                self.case.apply(server)
            await server.start()
            return server

        self._server = asyncio.run_coroutine_threadsafe(boot(), self._loop).result()
        return self
