"""Backends: how to read one kind of server. Detection picks the one that answers.

Each backend is a `BackendPlugin` of the `specmon.backends` entry points
(`backend_facts.plugins()`, the built-ins included): its facts, its priority and its reading
module (the built-ins' are here, `<name>.py`), whose three async functions over the target's
client make its `Backend`. Bench, check and the dashboard only ever talk to a `Backend`, so a new
server kind is a package of its own (docs/development.md, "Adding a backend").
"""

from __future__ import annotations

import functools
import importlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import httpx

from specmon.backend_facts import BackendPlugin, plugins
from specmon.errors import NotThisServer, SourceError
from specmon.model import ProbeResult, ServerInfo, ServerMetrics
from specmon.safe_text import bearer_secrets, safe_server_info, safe_text
from specmon.sources.backends.base import Backend
from specmon.sources.conditions import ConditionsWatch

__all__ = ["RECENT_SCRAPE_S", "Backend", "Connection", "backends", "connect"]

_log = logging.getLogger(__name__)
_FUNCTIONS = ("fetch_server_info", "fetch_metrics", "run_probe")


@functools.cache
def backends() -> tuple[Backend, ...]:
    """Every backend, in detection order (`backend_facts.plugins()`: by priority), each reading
    module imported once. One that fails to import or lacks a function is reported in one line
    (the `specmon.sources.backends` log) and skipped."""
    found = []
    for plugin in plugins():
        backend = _load(plugin)
        if backend is not None:
            found.append(backend)
    return tuple(found)


def _load(plugin: BackendPlugin) -> Backend | None:
    try:
        module = importlib.import_module(plugin.source)
    except Exception as exc:  # a plug-in's own import: any error is its, never specmon's
        _log.warning("backend %s not loaded: %s: %s", plugin.name, plugin.source, exc)
        return None
    functions = [getattr(module, name, None) for name in _FUNCTIONS]
    missing = [name for name, f in zip(_FUNCTIONS, functions, strict=True) if not callable(f)]
    if missing:
        _log.warning(
            "backend %s skipped: %s has no %s", plugin.name, plugin.source, ", ".join(missing)
        )
        return None
    info, metrics, probe = functions
    return Backend(plugin.facts, info, metrics, probe)  # type: ignore[arg-type]


async def connect(client: httpx.AsyncClient) -> tuple[Backend, ServerInfo]:
    """Find the backend that answers, and its server info.

    Raises:
        NotThisServer: No backend recognised the server.
        SourceError: Any other failure (unreachable, auth …), typed, from the first backend.
    """
    for backend in backends():
        try:
            return backend, _safe(await backend.server_info(client), client)
        except NotThisServer:
            continue
        except SourceError as exc:
            _mask(exc, client)
            raise
    known = ", ".join(b.facts.display for b in backends())
    raise NotThisServer(f"{client.base_url}: not a server specmon knows ({known})")


def _secrets(client: httpx.AsyncClient) -> tuple[str, ...]:
    """The client's API key: a server that echoes it in a string must not get it shown or
    stored (masking by field name, `secrets.mask_args`, misses a `model_path` that holds it)."""
    return bearer_secrets(client.headers.get("authorization"))


def _safe(info: ServerInfo, client: httpx.AsyncClient) -> ServerInfo:
    """Server info as specmon keeps it: every string of it safe (`safe_text`), the key masked."""
    return safe_server_info(info, secrets=_secrets(client))


def _mask(exc: SourceError, client: httpx.AsyncClient) -> None:
    """Mask the client's key in `exc`'s message (a server's error body it quotes; the message
    is already safe text: `SpecmonError`), keeping the error, its type and attributes."""
    secrets = _secrets(client)
    if secrets and any(s in str(exc) for s in secrets):
        exc.args = (safe_text(str(exc), secrets=secrets), *exc.args[1:])


RECENT_SCRAPE_S = 2.0
"""How old the last `/metrics` scrape may be for the server-info read to use it: more than the
dashboard's 1 s between scrapes, less than the 5 s between two server-info reads."""


class Connection:
    """A target's client and its backend, detected on the first server-info read.

    The dashboard's sources: `info`, `metrics` and `probe` each do one request (`info` reuses
    the last `metrics` scrape where its backend reads one: vLLM's, every 5 s).
    """

    def __init__(
        self, client: httpx.AsyncClient, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Args:
        client: The target's client, for its polls and its probes alike (the dashboard's runs
            through aiohttp's client: `sources.http.polling_client`).
        clock: Monotonic clock, to age the last scrape.
        """
        self.client = client
        self.clock = clock
        self.backend: Backend | None = None
        self._scrape: tuple[float, ServerMetrics] | None = None  # (when, what) `metrics` read
        self.conditions = ConditionsWatch(self.metrics)
        """The server's load and this machine's lag around each probe."""
        self._args: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None
        """The args of the last server info read: as the server sent them, and made safe."""

    async def info(self) -> ServerInfo:
        """Server info; detects the backend the first time."""
        if self.backend is None:
            self.backend, info = await connect(self.client)
            return info
        scrape = None
        if self._scrape is not None and self.clock() - self._scrape[0] <= RECENT_SCRAPE_S:
            scrape = self._scrape[1]
        try:
            return self._kept(await self.backend.server_info(self.client, scrape=scrape))
        except SourceError as exc:
            _mask(exc, self.client)
            raise

    def _kept(self, info: ServerInfo) -> ServerInfo:
        """`info` made safe (`_safe`); args the same as the last read's are not made safe again:
        they change only across restarts, and a server sends hundreds (~300 strings walked at
        every read, every 5 s a server: 4% of a 16-server fleet's CPU)."""
        known = self._args
        if known is not None and known[0] == info.args:
            return replace(_safe(replace(info, args={}), self.client), args=known[1])
        safe = _safe(info, self.client)
        self._args = (info.args, safe.args)
        return safe

    async def metrics(self) -> ServerMetrics:
        """One /metrics scrape (after the backend is known).

        Raises:
            SourceError: Typed. While the backend is not known yet, the failure of the server-info
                request that finds it, whose URL its message names: it says so, as it is told
                under `metrics`.
        """
        if self.backend is None:
            try:
                self.backend, _ = await connect(self.client)
            except SourceError as exc:
                exc.args = (f"{exc} (asked first, to know how to read /metrics)", *exc.args[1:])
                raise
        try:
            metrics = await self.backend.metrics(self.client)
        except SourceError as exc:
            _mask(exc, self.client)
            raise
        self._scrape = (self.clock(), metrics)
        return metrics

    async def probe(self, *, prompt: str, max_tokens: int, temperature: float = 0.0) -> ProbeResult:
        """One streaming probe, with the conditions it ran under."""
        if self.backend is None:
            self.backend, _ = await connect(self.client)
        try:
            return await self.conditions.around(
                self.backend.probe(
                    self.client, prompt=prompt, max_tokens=max_tokens, temperature=temperature
                )
            )
        except SourceError as exc:
            _mask(exc, self.client)
            raise
