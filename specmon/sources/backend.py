"""Backends: how to read one kind of server. Detection picks the one that answers.

Each backend is three async functions over the target's client. Bench, check and the dashboard
only ever talk to a `Backend`, so a new server kind is one module plus one entry in `BACKENDS`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import httpx

from specmon.errors import NotThisServer, SourceError
from specmon.model import ProbeResult, ServerInfo, ServerMetrics
from specmon.sources import llamacpp, vllm
from specmon.sources.metrics import fetch_metrics
from specmon.sources.probe import run_probe
from specmon.sources.sglang import fetch_server_info


class ProbeFn(Protocol):
    """A streaming probe: one generation request timed chunk by chunk; a probe that reads
    `/metrics` around itself does it through `scrape` when given (behind a router)."""

    def __call__(
        self,
        client: httpx.AsyncClient,
        *,
        prompt: str = ...,
        max_tokens: int = ...,
        temperature: float = ...,
        clock: Callable[[], float] = ...,
        wall: Callable[[], float] = ...,
        scrape: Callable[[], Awaitable[ServerMetrics]] | None = ...,
    ) -> Awaitable[ProbeResult]: ...


class InfoFn(Protocol):
    """Identity and configuration; raises NotThisServer when the server is not one."""

    def __call__(
        self, client: httpx.AsyncClient, *, scrape: ServerMetrics | None = ...
    ) -> Awaitable[ServerInfo]: ...


@dataclass(frozen=True, slots=True)
class Backend:
    """How to read one kind of server."""

    name: str
    server_info: InfoFn
    """Identity and configuration; `scrape` is a `/metrics` scrape just taken, which a backend
    that reads one for its info may use instead of taking another."""
    metrics: Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]]
    probe: ProbeFn


SGLANG = Backend("sglang", fetch_server_info, fetch_metrics, run_probe)
VLLM = Backend("vllm", vllm.fetch_server_info, vllm.fetch_metrics, vllm.run_probe)
LLAMACPP = Backend(
    "llamacpp", llamacpp.fetch_server_info, llamacpp.fetch_metrics, llamacpp.run_probe
)
# Tried in order: SGLang's server-info routes, vLLM's `/version` (no SGLang has one), then
# llama.cpp's `/props` (neither of the others has one).
BACKENDS = (SGLANG, VLLM, LLAMACPP)


async def connect(client: httpx.AsyncClient) -> tuple[Backend, ServerInfo]:
    """Find the backend that answers, and its server info.

    Raises:
        NotThisServer: No backend recognised the server.
        SourceError: Any other failure (unreachable, auth …), typed, from the first backend.
    """
    for backend in BACKENDS:
        try:
            return backend, await backend.server_info(client)
        except NotThisServer:
            continue
    raise NotThisServer(
        f"{client.base_url}: not a server specmon knows (SGLang, vLLM, llama.cpp's llama-server)"
    )


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

    async def info(self) -> ServerInfo:
        """Server info; detects the backend the first time."""
        if self.backend is None:
            self.backend, info = await connect(self.client)
            return info
        scrape = None
        if self._scrape is not None and self.clock() - self._scrape[0] <= RECENT_SCRAPE_S:
            scrape = self._scrape[1]
        return await self.backend.server_info(self.client, scrape=scrape)

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
        metrics = await self.backend.metrics(self.client)
        self._scrape = (self.clock(), metrics)
        return metrics

    async def probe(self, *, prompt: str, max_tokens: int, temperature: float = 0.0) -> ProbeResult:
        """One streaming probe."""
        if self.backend is None:
            self.backend, _ = await connect(self.client)
        return await self.backend.probe(
            self.client, prompt=prompt, max_tokens=max_tokens, temperature=temperature
        )
