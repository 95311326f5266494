"""The exporter's HTTP endpoint (aiohttp): `/metrics` for every target, and in the
multi-target mode `/probe?target=URL`, which probes that target once per scrape and answers its
families alone, as Prometheus's blackbox exporter does.

With `--any-target`, whoever reaches `/probe` may name any server; such an ad-hoc target (not
configured, not matched by `--allow-target`) costs a sampler and a client, and polls a host
nobody vouched for. So it is forgotten `AD_HOC_IDLE_S` after the last scrape naming it, at most
`MAX_AD_HOC` are kept and `AD_HOC_PER_MINUTE` added a minute (more: 429), and `/` and the
refusals list only the configured targets, never those other scrapers named.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
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
"""A target `/probe` added under `--allow-target` is forgotten (no longer sampled or exported)
after this long with no scrape naming it: a scraper that named a server once does not keep it
polled for good."""
AD_HOC_IDLE_S = 60.0
"""An ad-hoc target (let in by `--any-target` alone) is forgotten this long after the last
scrape naming it (Prometheus scrapes every 15 to 60 s: one that goes on naming it keeps it)."""
MAX_AD_HOC = 16
"""Ad-hoc targets kept at once."""
AD_HOC_PER_MINUTE = 10
"""New ad-hoc targets accepted in any minute."""
FORGET_EVERY_S = AD_HOC_IDLE_S / 4


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
        vouched: Callable[[str], bool] = lambda _: False,
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
        clock: Monotonic clock of the added targets' idle time and of the ad-hoc rate.
        vouched: Whether the user vouched for a target `new_session` accepts
            (`--allow-target`); those it did not are ad-hoc.
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
        self.vouched = vouched
        self.last_asked: dict[str, float] = {}
        """When a scrape last named each target `/probe` added (the configured ones stay)."""
        self.ad_hoc: set[str] = set()
        """The targets `/probe` added that the user did not vouch for."""
        self._ad_hoc_added: deque[float] = deque()  # when, within the last minute
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
            self._forgetting = asyncio.create_task(self._forget_idle_every(FORGET_EVERY_S))

    async def stop(self) -> None:
        """Stop listening."""
        if self._forgetting is not None:
            self._forgetting.cancel()
            self._forgetting = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def idle_limit(self, url: str) -> float:
        """How long an added target stays with no scrape naming it."""
        return AD_HOC_IDLE_S if url in self.ad_hoc else IDLE_TARGET_S

    def forget_idle(self) -> list[str]:
        """Stop sampling and exporting the added targets no scrape named for their
        `idle_limit`; returns their URLs."""
        now = self.clock()
        idle = [
            url
            for url, asked in self.last_asked.items()
            if now - asked >= self.idle_limit(url) and not self._probing(url)
        ]
        for url in idle:
            del self.last_asked[url], self.targets[url]
            self.ad_hoc.discard(url)
            self._locks.pop(url, None)
            self.fleet.remove(url)
        return idle

    def _ad_hoc_refusal(self) -> web.Response | None:
        """429 when another ad-hoc target would pass `MAX_AD_HOC` or `AD_HOC_PER_MINUTE`."""
        now = self.clock()
        while self._ad_hoc_added and now - self._ad_hoc_added[0] >= 60.0:
            self._ad_hoc_added.popleft()
        if len(self.ad_hoc) >= MAX_AD_HOC:
            return _plain(429, f"already {MAX_AD_HOC} targets named by scrapers", retry=60)
        if len(self._ad_hoc_added) >= AD_HOC_PER_MINUTE:
            return _plain(429, f"{AD_HOC_PER_MINUTE} new targets a minute at most", retry=60)
        return None

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
            ad_hoc = not self.vouched(url)
            refusal = self._ad_hoc_refusal() if ad_hoc else None
            if refusal is not None:
                return refusal
            session = self.new_session(url) if self.new_session is not None else None
            if session is None:
                known = ", ".join(sorted(self.configured))  # never what other scrapers named
                return _plain(
                    403,
                    f"{url} is not one of the exporter's targets ({known}); "
                    "--allow-target PATTERN accepts more",
                )
            if ad_hoc:
                self.ad_hoc.add(url)
                self._ad_hoc_added.append(self.clock())
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
        lines += ["", "targets:", *(f"  {url}" for url in sorted(self.configured))]
        if added := len(self.targets) - len(self.configured):
            lines.append(f"  and {added} named by scrapers of /probe (not listed)")
        return web.Response(text="\n".join(lines) + "\n")


def _plain(status: int, text: str, *, retry: int | None = None) -> web.Response:
    headers = {"Retry-After": str(retry)} if retry is not None else None
    return web.Response(status=status, text=f"specmon exporter: {text}\n", headers=headers)
