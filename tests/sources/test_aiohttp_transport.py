"""The polls' aiohttp transport says what httpx's own says, for answers and for failures, and
streams a probe as httpx's own does."""

from __future__ import annotations

import asyncio
import gzip
import re
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from specmon.errors import (
    HttpStatus,
    MalformedResponse,
    ResponseTooLarge,
    SpecmonError,
    StreamErrorEvent,
    StreamTruncated,
    TimedOut,
    Unreachable,
)
from specmon.sim import SimConfig, SimThread
from specmon.sources.http import get, make_client, polling_client
from specmon.sources.probe import run_probe
from specmon.target import Target


@pytest.fixture(scope="module")
def sim() -> Iterator[SimThread]:
    with SimThread(SimConfig(enable_metrics=True)) as server:
        yield server


def _clients(target: Target) -> list[httpx.AsyncClient]:
    """httpx's own transport, then the polls' (aiohttp)."""
    return [make_client(target), polling_client(target)]


async def _outcomes(target: Target, path: str) -> list[str]:
    """What `get` returned or raised, through each transport."""
    outcomes = []
    for client in _clients(target):
        async with client:
            try:
                response = await get(client, path)
            except SpecmonError as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")
            else:
                outcomes.append(f"{response.status_code} {response.headers['content-type']}")
    return outcomes


async def test_the_same_answer(sim: SimThread) -> None:
    answers = []
    for client in _clients(Target(sim.url)):
        async with client:
            info, metrics = [await get(client, p) for p in ("/server_info", "/metrics")]
            answers.append((info.content, info.headers["content-type"], metrics.text[:40]))
    assert answers[0] == answers[1] and answers[0][2].startswith("# HELP")


@pytest.mark.parametrize(
    ("url", "error", "words"),
    [
        ("http://127.0.0.1:9", Unreachable, "connection refused"),
        ("http://nonexistent.invalid:80", Unreachable, "host name not found"),
    ],
)
async def test_the_same_failure_to_connect(url: str, error: type, words: str) -> None:
    outcomes = await _outcomes(Target(url), "/server_info")
    assert outcomes[0] == outcomes[1] and outcomes[0].startswith(error.__name__)
    assert words in outcomes[0]


@pytest.mark.slow
async def test_the_same_status_and_timeout(sim: SimThread) -> None:
    sim.server.faults.status["/server_info"] = 500
    sim.server.faults.hang.add("/metrics")
    try:
        target = Target(sim.url, read_timeout=0.3)
        statuses = await _outcomes(target, "/server_info")
        hung = await _outcomes(target, "/metrics")
    finally:
        sim.server.faults.status.clear()
        sim.server.faults.hang.clear()
    assert statuses[0] == statuses[1] and statuses[0].startswith(HttpStatus.__name__)
    assert hung[0] == hung[1] and hung[0].startswith(TimedOut.__name__)


async def test_a_refused_body_leaves_the_connection_usable(sim: SimThread) -> None:
    """A body refused half-read is not left on a kept-alive connection for the next request."""
    sim.server.faults.huge["/metrics"] = 2 * 2**20
    target = Target(sim.url)
    async with polling_client(target) as client:
        try:
            with pytest.raises(ResponseTooLarge):
                await get(client, "/metrics", limit=2**20)
        finally:
            sim.server.faults.huge.clear()
        assert (await get(client, "/metrics")).content.startswith(b"# HELP")


async def _probe_outcomes(target: Target) -> list[str]:
    """What a probe returned (its chunks' shape) or raised, through each transport; digits
    left out (the simulated acceptance differs from one stream to the next)."""
    outcomes = []
    for client in _clients(target):
        async with client:
            try:
                result = await run_probe(client, max_tokens=64)
            except SpecmonError as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")
            else:
                tokens = [c.completion_tokens for c in result.chunks]
                ordered = tokens == sorted(tokens) and tokens[-1] == 64
                outcomes.append(
                    f"{len(result.chunks) > 10} chunks, in order to 64: {ordered}, "
                    f"finished: {result.finish_reason}"
                )
    return [re.sub(r"\d+(\.\d+)?", "N", o) for o in outcomes]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (None, None),
        ("drop_stream_after", StreamTruncated),
        ("truncate_stream_after", StreamTruncated),
        ("garbage_stream_after", MalformedResponse),
        ("stream_error_after", StreamErrorEvent),
    ],
)
async def test_the_same_probe_stream(sim: SimThread, fault: str | None, error: type | None) -> None:
    """The live probe streams through the polls' transport: the same chunks, the same words for
    a stream that breaks."""
    if fault is not None:
        setattr(sim.server.faults, fault, 3)
    try:
        outcomes = await _probe_outcomes(Target(sim.url))
    finally:
        if fault is not None:
            setattr(sim.server.faults, fault, None)
    assert outcomes[0] == outcomes[1], outcomes
    assert outcomes[0].startswith(error.__name__ if error else "True chunks, in order to N: True")


@pytest.mark.slow
async def test_the_same_stalled_stream(sim: SimThread) -> None:
    sim.server.faults.hang.add("/generate")
    try:
        outcomes = await _probe_outcomes(Target(sim.url, read_timeout=0.3))
    finally:
        sim.server.faults.hang.clear()
    assert outcomes[0] == outcomes[1] and outcomes[0].startswith(TimedOut.__name__)


@pytest.fixture
async def gzip_server() -> AsyncIterator[str]:
    """A server whose answers are gzip-encoded: text, a bomb (8 KB to 8 MiB) and garbage."""
    from aiohttp import web

    bodies = {"/text": gzip.compress(b"# HELP x\n" * 1000),
              "/bomb": gzip.compress(b"#" * 8 * 2**20), "/garbage": b"not gzip"}  # fmt: skip

    async def encoded(request: web.Request) -> web.Response:
        return web.Response(body=bodies[request.path], headers={"Content-Encoding": "gzip"})

    app = web.Application()
    for path in bodies:
        app.router.add_get(path, encoded)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_the_same_decoding_of_an_encoded_body(gzip_server: str) -> None:
    """Decoded as httpx decodes it; a body larger than the limit once decoded is refused; one
    that does not decode says so."""
    outcomes = []
    for client in _clients(Target(gzip_server)):
        async with client:
            text = await get(client, "/text")
            outcome = [text.content == b"# HELP x\n" * 1000, "content-encoding" in text.headers]
            for path in ("/bomb", "/garbage"):
                with pytest.raises((ResponseTooLarge, MalformedResponse)) as error:
                    await get(client, path, limit=2**20)
                outcome.append(f"{type(error.value).__name__}: {error.value}".split(" (")[0])
            outcomes.append(outcome)
    assert outcomes[0] == outcomes[1], outcomes
    assert outcomes[0][:2] == [True, False]
    assert outcomes[0][2].startswith("ResponseTooLarge") and "cannot be decoded" in outcomes[0][3]


async def test_a_query_is_sent(sim: SimThread) -> None:
    """vLLM's dev-mode config is read with `?config_format=json`: the polling client's GETs,
    built once per path and query, carry it."""
    seen = []
    for client in _clients(Target(sim.url)):
        async with client:
            for params in ({"config_format": "json"}, None, {"config_format": "json"}):
                response = await get(client, "/server_info", params=params)
                seen.append(str(response.request.url))
    assert seen[:3] == seen[3:]
    assert seen[0].endswith("/server_info?config_format=json") and seen[1].endswith("/server_info")


async def test_a_closed_client_sends_nothing(sim: SimThread) -> None:
    """As httpx's own client: a request after `aclose` is refused (aiohttp's transport would open
    a session that nothing closes, its ResourceWarning raised in whichever later test collects
    it), and so is one that was waiting for aiohttp's import when the client closed."""
    for client in _clients(Target(sim.url)):
        await get(client, "/metrics")
        await client.aclose()
        with pytest.raises(RuntimeError, match="the client has been closed"):
            await get(client, "/metrics")
    client = polling_client(Target(sim.url))
    waiting = asyncio.ensure_future(get(client, "/metrics"))
    await asyncio.sleep(0)  # it waits for the import (in a thread)
    await client.aclose()
    with pytest.raises(RuntimeError, match="the client has been closed"):
        await waiting
