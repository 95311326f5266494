"""Backends: how to read one kind of server. Detection picks the one that answers.

Each backend is a module here, `<name>.py`, whose `BACKEND` holds its facts
(`specmon.backend_facts`) and three async functions over the target's client. Bench, check and
the dashboard only ever talk to a `Backend`, so a new server kind is one module here, its entry
in `BACKENDS` and its facts' entry in `backend_facts.FACTS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from specmon.errors import NotThisServer, SourceError
from specmon.model import ProbeResult, ServerInfo, ServerMetrics
from specmon.safe_text import bearer_secrets, safe_server_info, safe_text
from specmon.sources.backends import llamacpp, sglang, trtllm, vllm
from specmon.sources.backends.base import Backend
from specmon.sources.conditions import ConditionsWatch

__all__ = ["BACKENDS", "RECENT_SCRAPE_S", "Backend", "Connection", "connect"]

BACKENDS = (sglang.BACKEND, trtllm.BACKEND, vllm.BACKEND, llamacpp.BACKEND)
"""Tried in order: SGLang's server-info routes; TensorRT-LLM's `/version` with a model card owned
by `tensorrt_llm` (its `/server_info` is not SGLang's answer, and its `/version` is vLLM's shape,
so it goes before vLLM); vLLM's `/version` (no SGLang has one); then llama.cpp's `/props` (none
of the others has one)."""


async def connect(client: httpx.AsyncClient) -> tuple[Backend, ServerInfo]:
    """Find the backend that answers, and its server info.

    Raises:
        NotThisServer: No backend recognised the server.
        SourceError: Any other failure (unreachable, auth …), typed, from the first backend.
    """
    for backend in BACKENDS:
        try:
            return backend, _safe(await backend.server_info(client), client)
        except NotThisServer:
            continue
        except SourceError as exc:
            _mask(exc, client)
            raise
    known = ", ".join(b.facts.display for b in BACKENDS)
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

    async def info(self) -> ServerInfo:
        """Server info; detects the backend the first time."""
        if self.backend is None:
            self.backend, info = await connect(self.client)
            return info
        scrape = None
        if self._scrape is not None and self.clock() - self._scrape[0] <= RECENT_SCRAPE_S:
            scrape = self._scrape[1]
        try:
            return _safe(await self.backend.server_info(self.client, scrape=scrape), self.client)
        except SourceError as exc:
            _mask(exc, self.client)
            raise

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
