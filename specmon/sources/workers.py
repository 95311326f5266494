"""Behind a router or gateway (`--metrics-url`): the probe goes to the router, server info and
`/metrics` come from its workers.

NVIDIA Dynamo's frontend, an SGLang router or a vLLM gateway takes the requests but serves none
of the workers' speculation counters: each worker serves its own. A `RouterConnection` reads
every worker together, checks that they serve one backend, model and speculative configuration,
and sums their counters (`analysis.worker_sums`); a worker that cannot be read is named in the
metrics' `workers` and left out of the sums.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TypeVar

import httpx

from specmon.analysis.worker_sums import WorkerScrape, WorkerSums, add_scrapes
from specmon.errors import SourceError, SpecmonError, WorkersDisagree
from specmon.model import ProbeResult, ServerInfo, ServerMetrics
from specmon.sources.backends import Connection
from specmon.sources.http import polling_client
from specmon.target import Target

T = TypeVar("T")


class RouterConnection(Connection):
    """The router's client for the probe, and a `Connection` per worker for the rest."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        workers: Sequence[tuple[str, Connection]],
        *,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """Args:
        client: The router's client: the probe's requests go there.
        workers: Each worker's URL and connection, in the configured order.
        wall: Wall clock (when a worker went down).
        """
        super().__init__(client)
        self.workers = tuple(workers)
        self.wall = wall
        self._sums: WorkerSums | None = None
        self._disagree: WorkersDisagree | None = None
        self._scraping = asyncio.Lock()
        """One scrape of the workers at a time (the sampler's and a probe's): the sums take
        them in the order they were read."""

    async def info(self) -> ServerInfo:
        """The workers' server info (the first that answers), once they agree.

        Raises:
            WorkersDisagree: They serve different backends, models or speculation.
            SourceError: No worker answered (each named with its reason).
        """
        answers = await self._each(lambda c: c.info())
        infos = [(url, a) for url, a in answers if isinstance(a, ServerInfo)]
        if not infos:
            raise SourceError(_every_worker_failed(answers))
        self._disagree = _disagreement(infos)
        if self._disagree is not None:
            raise self._disagree
        self.backend = next(c.backend for url, c in self.workers if url == infos[0][0])
        return infos[0][1]

    async def metrics(self) -> ServerMetrics:
        """Every worker's `/metrics`, summed; a worker not read is named, not counted.

        Raises:
            WorkersDisagree: The last server-info read found the workers disagree.
            SourceError: No worker answered.
        """
        async with self._scraping:
            answers = await self._each(lambda c: c.metrics())
            scrapes = [
                WorkerScrape(url, a, None)
                if isinstance(a, ServerMetrics)
                else WorkerScrape(url, None, str(a))
                for url, a in answers
            ]
            self._sums = add_scrapes(self._sums, scrapes, self.wall())
        if self._disagree is not None:
            raise self._disagree
        if not any(s.metrics is not None for s in scrapes):
            raise SourceError(_every_worker_failed(answers))
        if self.backend is None:
            self.backend = next((c.backend for _, c in self.workers if c.backend), None)
        return self._sums.metrics

    async def probe(self, *, prompt: str, max_tokens: int, temperature: float = 0.0) -> ProbeResult:
        """One streaming probe through the router, read as its workers' backend speaks; its
        scrapes around the stream (vLLM, llama.cpp) are the workers' sums."""
        if self.backend is None:
            await self.info()
        assert self.backend is not None  # `info` found it, or raised
        return await self.conditions.around(
            self.backend.probe(
                self.client,
                prompt=prompt,
                max_tokens=max_tokens,
                temperature=temperature,
                scrape=self.metrics,
            )
        )

    async def _each(
        self, read: Callable[[Connection], Awaitable[T]]
    ) -> list[tuple[str, T | SpecmonError]]:
        """`read` of every worker at once: its answer or its typed error."""

        async def one(connection: Connection) -> T | SpecmonError:
            try:
                return await read(connection)
            except SpecmonError as exc:
                return exc

        answers = await asyncio.gather(*(one(c) for _, c in self.workers))
        return [(url, a) for (url, _), a in zip(self.workers, answers, strict=True)]


def _every_worker_failed(answers: Sequence[tuple[str, object]]) -> str:
    reasons = "; ".join(f"{url}: {a}" for url, a in answers)
    return f"no worker behind the router answered ({reasons})"


def _disagreement(infos: Sequence[tuple[str, ServerInfo]]) -> WorkersDisagree | None:
    """Why the workers cannot be summed as one server, or None when they agree."""
    aspects: tuple[tuple[str, Callable[[ServerInfo], str]], ...] = (
        ("backend", lambda i: i.backend),
        ("model", lambda i: i.model or "?"),
        ("speculation", lambda i: i.speculative.describe() if i.speculative else "off"),
    )
    for aspect, say in aspects:
        values = [(url, say(info)) for url, info in infos]
        if len({v for _, v in values}) > 1:
            each = "; ".join(f"{url} {v}" for url, v in values)
            return WorkersDisagree(
                f"the workers behind the router differ in {aspect} ({each}): their counters "
                "cannot be summed as one server's; give --metrics-url for one deployment's "
                "workers only"
            )
    return None


@asynccontextmanager
async def open_connection(
    target: Target, client_of: Callable[[Target], httpx.AsyncClient] = polling_client
) -> AsyncIterator[Connection]:
    """A target's connection with its clients open: a `RouterConnection` when it names workers
    (`Target.metrics_urls`), which share its key, timeouts and TLS setting."""
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(client_of(target))
        if not target.metrics_urls:
            yield Connection(client)
            return
        workers = []
        for url in target.metrics_urls:
            worker = dataclasses.replace(target, url=url, metrics_urls=())
            workers.append((url, Connection(await stack.enter_async_context(client_of(worker)))))
        yield RouterConnection(client, workers)
