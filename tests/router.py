"""A spec-blind router in front of simulated workers, as NVIDIA Dynamo's frontend or a gateway
is: generation requests go to the workers in turn (passing over one that refuses connections)
and stream back; its `/metrics` holds only its
own request counter (no speculation), and it has no server-info route."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import AsyncIterator, Iterator, Sequence

import aiohttp
from aiohttp import web

ROUTER_METRICS = "# TYPE router_requests_total counter\nrouter_requests_total {}\n"
SERVED = ("/generate", "/v1/completions", "/v1/chat/completions", "/completion", "/v1/models")


@contextlib.asynccontextmanager
async def router(workers: Sequence[str]) -> AsyncIterator[str]:
    """Serve a router to `workers` for the block; yields its URL."""
    turn = itertools.cycle(workers)
    forwarded = 0

    async def forward(request: web.Request) -> web.StreamResponse:
        nonlocal forwarded
        if request.path == "/metrics":
            return web.Response(text=ROUTER_METRICS.format(forwarded))
        if request.path not in SERVED:
            raise web.HTTPNotFound()
        forwarded += 1
        body = await request.read()
        headers = {"Content-Type": request.headers.get("Content-Type", "application/json")}
        for _ in workers:
            try:
                async with session.request(
                    request.method, next(turn) + request.path, data=body, headers=headers
                ) as upstream:
                    answer = web.StreamResponse(status=upstream.status)
                    answer.content_type = upstream.content_type
                    await answer.prepare(request)
                    async for piece in upstream.content.iter_any():
                        await answer.write(piece)
                    await answer.write_eof()
                    return answer
            except aiohttp.ClientConnectorError:
                continue
        raise web.HTTPBadGateway()

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None)
    async with aiohttp.ClientSession() as session:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            await runner.cleanup()


@contextlib.contextmanager
def router_thread(workers: Sequence[str]) -> Iterator[str]:
    """`router` on its own event loop in a thread, for a test that runs the CLI (its signal
    handlers need the main thread); yields its URL."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-router", daemon=True)
    thread.start()
    serving = router(workers)
    try:
        yield asyncio.run_coroutine_threadsafe(serving.__aenter__(), loop).result()
    finally:
        asyncio.run_coroutine_threadsafe(serving.__aexit__(None, None, None), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
