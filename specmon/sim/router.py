"""A spec-blind router in front of simulated workers, as NVIDIA Dynamo's frontend or a gateway
is: generation requests go to the workers in turn (passing over one that refuses connections)
and stream back; its `/metrics` holds only its own request counter (no speculation), and it has
no server-info route. Router mode (`--metrics-url`) is tested and shown against it.

`python -m specmon.sim.router --port 8000 URL [URL …]` serves one until Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Sequence

import aiohttp
from aiohttp import web

ROUTER_METRICS = "# TYPE router_requests_total counter\nrouter_requests_total {}\n"
ROUTED = ("/generate", "/v1/completions", "/v1/chat/completions", "/completion", "/v1/models")
"""What the router passes on: the generation routes of the three servers, and the model list."""


@contextlib.asynccontextmanager
async def router(
    workers: Sequence[str], host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Serve a router to `workers` (base URLs) for the block; yields its URL (port 0: a free
    one)."""
    turn = itertools.cycle(workers)
    forwarded = 0

    async def forward(request: web.Request) -> web.StreamResponse:
        nonlocal forwarded
        if request.path == "/metrics":
            return web.Response(text=ROUTER_METRICS.format(forwarded))
        if request.path not in ROUTED:
            raise web.HTTPNotFound()
        forwarded += 1
        body = await request.read()
        headers = {
            name: value
            for name, value in request.headers.items()
            if name.lower() in ("content-type", "authorization")
        }
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
        try:
            await web.TCPSite(runner, host, port).start()
            bound = next(a[1] for a in runner.addresses if isinstance(a, tuple))
            yield f"http://{host}:{bound}"
        finally:
            await runner.cleanup()


async def serve(workers: Sequence[str], host: str, port: int) -> None:
    """Serve until cancelled, saying where."""
    async with router(workers, host, port) as url:
        print(f"specmon sim router: {url} -> {', '.join(workers)}", flush=True)
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of `python -m specmon.sim.router`."""
    parser = argparse.ArgumentParser(
        prog="python -m specmon.sim.router",
        description="A router in front of simulated workers: it takes generation requests and "
        "serves none of their speculation counters (as Dynamo's frontend).",
    )
    parser.add_argument("workers", nargs="+", metavar="URL", help="a worker's base URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    workers = [w.rstrip("/") if "://" in w else f"http://{w}" for w in args.workers]
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(workers, args.host, args.port))


if __name__ == "__main__":
    main()
