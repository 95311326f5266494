"""The exporter's HTTP endpoint (aiohttp): `/metrics` for every target, and in the
multi-target mode `/probe?target=URL`, which probes that target once per scrape and answers its
families alone, as Prometheus's blackbox exporter does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from aiohttp import web

from specmon import __version__
from specmon.errors import SpecmonError, TargetError
from specmon.exporter.metrics import CONTENT_TYPE, ExportedTarget, render
from specmon.listen import listen
from specmon.session.fleet import Fleet
from specmon.session.server_session import ServerSession
from specmon.target import normalise_url

MAX_TARGETS = 256
"""Targets `/probe` may add with `any_target`: each is a sampler and a client kept open."""
IDLE_TARGET_S = 15 * 60.0
"""A target `/probe` added is forgotten (no longer sampled or exported) after this long with no
scrape naming it: a scraper that named a server once does not keep it polled for good."""


class ExporterError(SpecmonError):
    """The exporter could not start (the port is taken, the address is not this machine's)."""


class Exporter:
    """Serves a fleet's figures.

    Example:
        exporter = Exporter(fleet, "127.0.0.1", 9835)
        await exporter.start()
        await fleet.run()  # until cancelled
    """

    def __init__(
        self,
        fleet: Fleet,
        host: str,
        port: int,
        *,
        multi_target: bool = False,
        new_session: Callable[[str], ServerSession | None] | None = None,
        connect_timeout: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Args:
        fleet: The configured targets' sessions.
        host: Address to listen on.
        port: TCP port (0 picks a free one).
        multi_target: Serve `/probe?target=URL` (one probe per scrape).
        new_session: With `multi_target`, builds the session of a target that is not one of
            the fleet's, or returns None to refuse it (`--allow-target`, `--any-target`); None
            accepts the fleet's targets only.
        connect_timeout: How long a `/probe` of a target just added waits for its connection.
        clock: Monotonic clock of the added targets' idle time.
        """
        self.fleet = fleet
        self.host = host
        self.port = port
        self.multi_target = multi_target
        self.new_session = new_session
        self.connect_timeout = connect_timeout
        self.targets = {s.url: ExportedTarget(s) for s in fleet.sessions}
        self.configured = frozenset(self.targets)
        self.clock = clock
        self.last_asked: dict[str, float] = {}
        """When a scrape last named each target `/probe` added (the configured ones stay)."""
        self._locks: dict[str, asyncio.Lock] = {}
        self._runner: web.AppRunner | None = None
        self._forgetting: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The base URL (valid once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Listen.

        Raises:
            ExporterError: The address cannot be bound.
        """
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/probe", self._probe)
        app.router.add_get("/", self._index)
        self._runner, self.port = await listen(
            app, self.host, self.port, error=ExporterError, hint="(pass --listen HOST:PORT)"
        )
        if self.new_session is not None:
            self._forgetting = asyncio.create_task(self._forget_idle_every(IDLE_TARGET_S / 4))

    async def stop(self) -> None:
        """Stop listening."""
        if self._forgetting is not None:
            self._forgetting.cancel()
            self._forgetting = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def forget_idle(self) -> list[str]:
        """Stop sampling and exporting the added targets no scrape named for `IDLE_TARGET_S`;
        returns their URLs."""
        now = self.clock()
        idle = [
            url
            for url, asked in self.last_asked.items()
            if now - asked >= IDLE_TARGET_S and not self._probing(url)
        ]
        for url in idle:
            del self.last_asked[url], self.targets[url]
            self._locks.pop(url, None)
            self.fleet.remove(url)
        return idle

    def _probing(self, url: str) -> bool:
        lock = self._locks.get(url)
        return lock is not None and lock.locked()

    async def _forget_idle_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self.forget_idle()

    async def _metrics(self, _: web.Request) -> web.StreamResponse:
        body = render(list(self.targets.values()))
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def _probe(self, request: web.Request) -> web.StreamResponse:
        if not self.multi_target:
            return _plain(404, "/probe is served in the multi-target mode (--multi-target)")
        raw = request.query.get("target", "")
        if not raw:
            return _plain(400, "give the server to probe: /probe?target=URL")
        try:
            url = normalise_url(raw)
        except TargetError as exc:
            return _plain(400, f"target: {exc}")
        exported = self.targets.get(url)
        if exported is None:
            if len(self.targets) >= MAX_TARGETS:
                return _plain(400, f"already {MAX_TARGETS} targets")
            session = self.new_session(url) if self.new_session is not None else None
            if session is None:
                known = ", ".join(self.targets)
                return _plain(
                    403,
                    f"{url} is not one of the exporter's targets ({known}); "
                    "--allow-target PATTERN accepts more",
                )
            self.fleet.add(session)
            exported = self.targets[url] = ExportedTarget(session)
        if url not in self.configured:
            self.last_asked[url] = self.clock()
        # One probe at a time per server: two scrapers at once must not measure each other.
        async with self._locks.setdefault(url, asyncio.Lock()):
            await exported.session.probe_now(self.connect_timeout)
        return web.Response(body=render([exported]), headers={"Content-Type": CONTENT_TYPE})

    async def _index(self, _: web.Request) -> web.StreamResponse:
        lines = [f"specmon exporter {__version__}", "", "/metrics: every target"]
        if self.multi_target:
            lines.append("/probe?target=URL: probe that target now, its figures alone")
        lines += ["", "targets:", *(f"  {url}" for url in self.targets)]
        return web.Response(text="\n".join(lines) + "\n")


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=f"specmon exporter: {text}\n")
