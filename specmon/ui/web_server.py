"""`specmon web`'s HTTP side: textual-serve, behind a token when others can reach it.

textual-serve (Textual's own project) serves the page, the terminal in it (xterm.js) and one
websocket per tab, and starts one dashboard process per websocket. Its `Server` is extended in
three places: a middleware that refuses a Host that is not this machine's (DNS rebinding: a page
on a name its owner points at 127.0.0.1 is same-origin with itself, so only the Host header
tells it apart), cross-site websockets and a request without the token; a cap on open tabs
(each one is a process); and an index page whose addresses follow the Host the browser used,
not the bind address (0.0.0.0 is no address a browser can open). Each tab is a
`specmon.ui.web_tabs.TabProcess`: its size clamped, its process group reaped when it closes, and
it counts against the cap until its process is gone, not only while its websocket is open.

The token, once given in the address, becomes a cookie named for the port (cookies ignore
ports: every service on this host is sent it) whose value is an HMAC of the token under a key
made at start, never the token itself: another service that reads it learns nothing it can use
elsewhere, nor here once this process ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import html
import re
import secrets
import socket
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server, to_int

from specmon.session.hub import Hub
from specmon.ui.web_tabs import TabProcess, clamp_size, kill_group, relay_browser
from specmon.web_hosts import names_this_host


def cookie_name(port: int) -> str:
    """The cookie that carries the token's proof to the server on `port` (one per port: two
    `specmon web` on one host keep theirs apart)."""
    return f"specmon-web-{port}"


_REFUSED = """<!DOCTYPE html>
<html><head><title>specmon web: token needed</title></head>
<body style="font-family: monospace; max-width: 46em; margin: 3em auto">
<h1>specmon web: this dashboard needs its token</h1>
<p>{reason}</p>
<p>Open the address <code>specmon web</code> printed when it started, which ends in
<code>/?token=…</code> (the token is in the file or environment variable it was given).</p>
</body></html>
"""
_FOREIGN = """<!DOCTYPE html>
<html><head><title>specmon web: unknown host</title></head>
<body style="font-family: monospace; max-width: 46em; margin: 3em auto">
<h1>specmon web: not served under this name</h1>
<p>This request named {host}, which is not one of this machine's names (the page that sent it
may be on another site). To reach the dashboard by this name, start it with
<code>--allow-host NAME</code>.</p>
</body></html>
"""
_FULL = """<!DOCTYPE html>
<html><head><title>specmon web: all tabs in use</title></head>
<body style="font-family: monospace; max-width: 46em; margin: 3em auto">
<h1>specmon web: tab limit reached ({limit} open)</h1>
<p>Each tab runs its own dashboard process, and this server runs at most {limit} at once
(<code>--max-tabs</code>). Close a tab on it, then reload this one.</p>
</body></html>
"""


SHUTDOWN_TIMEOUT_S = 5.0
"""How long a stopping `specmon web` waits for open tabs to close."""


class DashboardServer(Server):
    """textual-serve's server: this machine's Host only, an optional token, same-origin
    websockets and at most `max_tabs` tabs."""

    def __init__(
        self,
        command: str,
        *,
        token: str | None,
        hosts: frozenset[str],
        max_tabs: int,
        port: int = 0,
    ) -> None:
        """Args:
        command: The shell command that runs one tab's dashboard.
        token: Required of every request when not None (query `?token=` once, then a cookie).
        hosts: The host names (lower case, IPv6 without brackets) a request may name, at any
            port.
        max_tabs: The most tab processes alive at once.
        port: The port it listens on (names the cookie).
        """
        super().__init__(command, title="specmon")
        self.token = token
        self.hosts = hosts
        self.max_tabs = max_tabs
        self.cookie = cookie_name(port)
        self._cookie_key = secrets.token_bytes(32)
        self.open_tabs = 0
        """Tabs from their websocket's first moment until their process is reaped."""
        self.tabs: set[TabProcess] = set()
        """The tabs whose process may be alive."""

    async def _make_app(self) -> web.Application:
        # textual-serve's own hook for its aiohttp app (1.x: the `<2` range in pyproject).
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        answer = self._refusal(request)
        if answer is not None:
            return answer
        if request.path in ("/", "/ws") and self.open_tabs >= self.max_tabs:
            return _page(_FULL.format(limit=self.max_tabs), 503)
        # `handle_websocket` counts the tab before its first await: no other request can pass
        # this check in between.
        response: web.StreamResponse = await handler(request)
        return response

    def _refusal(self, request: web.Request) -> web.Response | None:
        """What answers `request` in place of the dashboard: a refusal, or the redirect that
        turns a token in the address into a cookie; None to let it through."""
        if not names_this_host(request.headers.get("Host", ""), self.hosts):
            named = html.escape(request.headers.get("Host", "no Host"))
            # The names it answers to are not listed: a rebinding page could read them.
            return _page(_FOREIGN.format(host=named), 403)
        origin = request.headers.get("Origin")
        if request.path == "/ws" and origin and urlsplit(origin).netloc != request.host:
            # A page elsewhere must not drive the dashboard through this user's browser.
            return _refused(f"a page at {html.escape(origin)} may not open this dashboard", 403)
        token = self.token
        if token is None:
            return None
        given = request.query.get("token")
        if given is not None:
            if not hmac.compare_digest(given.encode(), token.encode()):
                return _refused("The token in the address is not this dashboard's.", 403)
            # Into a cookie, and out of the address bar (and the browser's history).
            query = {k: v for k, v in request.query.items() if k != "token"}
            response = web.Response(
                status=303, headers={"Location": str(request.rel_url.with_query(query))}
            )
            response.set_cookie(
                self.cookie,
                self.proof(token),
                path="/",
                httponly=True,
                samesite="Strict",
                secure=request.secure,
            )
            return response
        cookie = request.cookies.get(self.cookie, "")
        if not hmac.compare_digest(cookie.encode(), self.proof(token).encode()):
            return _refused("It asks every visitor for its token; none came with this.", 401)
        return None

    def proof(self, token: str) -> str:
        """The cookie's value: the token's HMAC under this process's key (not the token)."""
        return hmac.new(self._cookie_key, token.encode(), hashlib.sha256).hexdigest()

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: its websocket and its dashboard process, counted until the process is
        reaped. A browser that goes, however abruptly, ends it without a word."""
        self.open_tabs += 1  # before the first await: `_guard` checked the count just now
        websocket = web.WebSocketResponse(heartbeat=15)
        width, height = clamp_size(request.query.get("width"), request.query.get("height"))
        tab: TabProcess | None = None
        try:
            await websocket.prepare(request)
            tab = TabProcess(self.command, websocket, self.download_manager)
            self.tabs.add(tab)
            await tab.start(width, height)
            await relay_browser(websocket, tab)
        except (ConnectionError, RuntimeError, TimeoutError):
            pass  # the browser went while it started or spoke
        except OSError as exc:
            print(f"specmon web: cannot start a tab: {exc}", flush=True)
        finally:
            if tab is None:
                self.open_tabs -= 1
            else:
                closing = asyncio.ensure_future(self._close(tab))
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await websocket.close()
                await asyncio.shield(closing)  # on cancellation, the closing goes on
        return websocket

    async def _close(self, tab: TabProcess) -> None:
        try:
            await tab.stop()
        finally:
            self.tabs.discard(tab)
            self.open_tabs -= 1

    def kill_tabs(self) -> None:
        """SIGKILL every tab's process group (the server is stopping)."""
        for tab in list(self.tabs):
            if tab.process is not None:
                kill_group(tab.process)

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
        page = aiohttp_jinja2.render_string("app_index.html", request, context)
        # Its stylesheet from fonts.googleapis.com fails on an air-gapped cluster: the terminal
        # falls back to the machine's own monospace fonts (textual.js names Monaco, Courier New).
        page = EXTERNAL_STYLESHEET.sub("", page)
        return web.Response(text=page, content_type="text/html")

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: `specmon web` has said where it listens (textual-serve prints a banner)."""


EXTERNAL_STYLESHEET = re.compile(r"<link\s[^>]*href=\"https?://[^>]*>\s*", re.IGNORECASE)
"""A `<link>` that loads from the internet (textual-serve's page loads Roboto Mono so)."""


def _refused(reason: str, status: int) -> web.Response:
    return _page(_REFUSED.format(reason=reason), status)


def _page(text: str, status: int) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/html")


async def serve(
    hub: Hub,
    command: str,
    listening: socket.socket,
    token: str | None,
    *,
    hosts: frozenset[str],
    max_tabs: int,
) -> None:
    """Serve the dashboard on `listening` and run the hub every tab reads, until cancelled.

    Args:
        hub: The one feed every tab subscribes to.
        command: The shell command that runs one tab's dashboard against the hub.
        listening: The bound socket (bound by the caller, which reports a taken port).
        token: Asked of every request when not None.
        hosts: The host names a request may name (`DashboardServer`).
        max_tabs: The most tabs open at once.
    """
    server = DashboardServer(
        command, token=token, hosts=hosts, max_tabs=max_tabs, port=listening.getsockname()[1]
    )
    # On Ctrl-C or SIGTERM, tabs' websockets get this long to close before they are cancelled
    # (aiohttp waits 60 s by default: a stop would hang that long on a tab still starting).
    runner = web.AppRunner(
        await server._make_app(), handle_signals=False, shutdown_timeout=SHUTDOWN_TIMEOUT_S
    )
    await runner.setup()
    try:
        await web.SockSite(runner, listening).start()
        await hub.run()
    finally:
        try:
            await runner.cleanup()
        finally:
            server.kill_tabs()  # any a closing tab left
