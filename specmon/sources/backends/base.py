"""The type every backend module fills in: its facts and its three async functions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import httpx

from specmon.backend_facts import BackendFacts
from specmon.model import ProbeResult, ServerInfo, ServerMetrics


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

    facts: BackendFacts
    """What it is, as data every layer reads (`backend_facts`)."""
    server_info: InfoFn
    """Identity and configuration; `scrape` is a `/metrics` scrape just taken, which a backend
    that reads one for its info may use instead of taking another."""
    metrics: Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]]
    probe: ProbeFn

    @property
    def name(self) -> str:
        """`ServerInfo.backend`: "sglang", "vllm" …"""
        return self.facts.name
