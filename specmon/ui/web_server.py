"""`specmon web`'s HTTP side: textual-serve, behind a token when others can reach it.

textual-serve (Textual's own project) serves the page, the terminal in it (xterm.js) and one
websocket per tab, and starts one dashboard process per websocket. Its `Server` is extended in
two places: a middleware that asks for the token (and refuses cross-site websockets), and an
index page whose addresses follow the Host the browser used, not the bind address (0.0.0.0 is
no address a browser can open).
"""

from __future__ import annotations

import hmac
import socket
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server, to_int

from specmon.session.hub import Hub

TOKEN_COOKIE = "specmon_web_token"
_REFUSED = """<!DOCTYPE html>
<html><head><title>specmon web: token needed</title></head>
<body style="font-family: monospace; max-width: 46em; margin: 3em auto">
<h1>specmon web: this dashboard needs its token</h1>
<p>{reason}</p>
<p>Open the address <code>specmon web</code> printed when it started, which ends in
<code>/?token=…</code> (the token is in the file or environment variable it was given).</p>
</body></html>
"""


class DashboardServer(Server):
    """textual-serve's server, with an optional token and same-origin websockets."""

    def __init__(self, command: str, *, token: str | None) -> None:
        """Args:
        command: The shell command that runs one tab's dashboard.
        token: Required of every request when not None (query `?token=` once, then a cookie).
        """
        super().__init__(command, title="specmon")
        self.token = token

    async def _make_app(self) -> web.Application:
        # textual-serve's own hook for its aiohttp app (1.x: the `<2` range in pyproject).
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if request.path == "/ws" and origin and urlsplit(origin).netloc != request.host:
            # A page elsewhere must not drive the dashboard through this user's browser.
            return _refused(f"a page at {origin} may not open this dashboard", 403)
        token = self.token
        if token is None:
            response: web.StreamResponse = await handler(request)
            return response
        given = request.query.get("token")
        if given is not None:
            if not hmac.compare_digest(given.encode(), token.encode()):
                return _refused("The token in the address is not this dashboard's.", 403)
            # Into a cookie, and out of the address bar (and the browser's history).
            query = {k: v for k, v in request.query.items() if k != "token"}
            response = web.Response(
                status=303, headers={"Location": str(request.rel_url.with_query(query))}
            )
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict",
                                secure=request.secure)  # fmt: skip
            return response
        cookie = request.cookies.get(TOKEN_COOKIE, "")
        if not hmac.compare_digest(cookie.encode(), token.encode()):
            return _refused("It asks every visitor for its token; none came with this.", 401)
        response = await handler(request)
        return response

    async def handle_index(self, request: web.Request) -> web.Response:
        """The page: textual-serve's, with addresses built from the request's Host."""
        host = f"{request.scheme}://{request.host}"
        websocket = ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws"
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": websocket,
            "config": {"static": {"url": f"{host}/static/"}},
            "application": {"name": self.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: `specmon web` has said where it listens (textual-serve prints a banner)."""


def _refused(reason: str, status: int) -> web.Response:
    return web.Response(status=status, text=_REFUSED.format(reason=reason),
                        content_type="text/html")  # fmt: skip


async def serve(hub: Hub, command: str, listening: socket.socket, token: str | None) -> None:
    """Serve the dashboard on `listening` and run the hub every tab reads, until cancelled.

    Args:
        hub: The one feed every tab subscribes to.
        command: The shell command that runs one tab's dashboard against the hub.
        listening: The bound socket (bound by the caller, which reports a taken port).
        token: Asked of every request when not None.
    """
    server = DashboardServer(command, token=token)
    runner = web.AppRunner(await server._make_app(), handle_signals=False)
    await runner.setup()
    try:
        await web.SockSite(runner, listening).start()
        await hub.run()
    finally:
        await runner.cleanup()
