"""Serving an aiohttp application on one address: what the agent and the exporter share."""

from __future__ import annotations

import os

from aiohttp import web

from specmon.errors import SpecmonError


async def listen(
    app: web.Application, host: str, port: int, *, error: type[SpecmonError], hint: str
) -> tuple[web.AppRunner, int]:
    """Serve `app` on host:port; returns its runner (to clean up) and the port bound.

    Args:
        app: The application.
        host: Address to listen on.
        port: TCP port (0 picks a free one).
        error: Raised, with the reason and `hint`, when the address cannot be bound.
        hint: What to do then, e.g. "(dcgm-exporter may hold it: pass --port)".
    """
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise error(f"cannot listen on {host}:{port}: {reason} {hint}") from None
    for address in runner.addresses:
        if isinstance(address, tuple):
            return runner, int(address[1])
    return runner, port
