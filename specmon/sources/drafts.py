"""What the vLLM, llama.cpp and TensorRT-LLM backends share: draft counters, and probes between
two scrapes.

They count speculation the same way (vLLM and llama.cpp `spec_decode_num_drafts_total`,
`…_num_draft_tokens_total`, `…_num_accepted_tokens_total`, `…_per_pos_total{position}`;
TensorRT-LLM the same figures by `token_position`), and none reports per-request acceptance by
position in its stream as SGLang does (vLLM only when launched with
`--per-request-spec-decode-metrics`), so their probes scrape `/metrics` before and after the
stream (`ProbeResult.scrapes`): when no other request ran meanwhile, the counters' deltas are the
server's own account of the probe.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from specmon.errors import SourceError
from specmon.model import UNKNOWN_METHOD, ProbeResult, ServerMetrics, SpecConfig
from specmon.sources.metrics import Series
from specmon.sources.probe import ChunkUpdate, stream_probe


def per_position(series: list[Series], label: str = "position") -> tuple[float, ...] | None:
    """Tokens by draft position, its number in `label` (summed over engines); None when there
    are none."""
    by_position: dict[int, float] = defaultdict(float)
    for s in series:
        position = dict(s.labels).get(label, "")
        if position.isdigit():
            by_position[int(position)] += s.value
    if not by_position:
        return None
    return tuple(by_position.get(i, 0.0) for i in range(max(by_position) + 1))


def spec_from_positions(
    metrics: ServerMetrics | None, length_name: str | None
) -> SpecConfig | None:
    """Speculation as a scrape shows it where the server does not serve its method: on when the
    draft counters exist, its draft length the number of positions counted (None before any)."""
    if metrics is None or metrics.spec_drafts_total is None:
        return None
    positions = metrics.spec_accepted_per_position
    return SpecConfig(
        UNKNOWN_METHOD,
        len(positions) if positions else None,
        None,
        None,
        length_name=length_name,
    )


def scraper(
    scrape: Callable[[], Awaitable[ServerMetrics]] | None,
    fetch: Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]],
) -> Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]]:
    """How a probe reads `/metrics` around itself: `scrape` when given (behind a router, the
    workers' sums: the router serves none of their counters), else `fetch` of its own client."""
    if scrape is None:
        return fetch

    async def from_scrape(_client: httpx.AsyncClient) -> ServerMetrics:
        return await scrape()

    return from_scrape


async def metrics_or_none(
    client: httpx.AsyncClient, fetch: Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]]
) -> ServerMetrics | None:
    """One scrape, or None when metrics are off or the scrape failed (they are optional)."""
    try:
        return await fetch(client)
    except SourceError:
        return None


# Scrapes after a probe before giving up on the server counting it (each is a round trip).
SETTLE_SCRAPES = 20


async def settled_scrape(
    client: httpx.AsyncClient,
    fetch: Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]],
    before: ServerMetrics,
    tokens: int,
) -> ServerMetrics | None:
    """The scrape after a probe of `tokens` tokens, once the server has counted them.

    llama.cpp adds a request to its counters when it releases the request's slot, which can
    come a moment after the last chunk has gone out (seen under load): while the generation
    counter is still short of the probe's tokens, scrape again, at most `SETTLE_SCRAPES` times.
    """
    after = None
    for _ in range(SETTLE_SCRAPES):
        after = await metrics_or_none(client, fetch)
        if after is None:
            return None
        start, end = before.generation_tokens_total, after.generation_tokens_total
        if start is None or end is None or end - start >= tokens:
            return after
    return after


@dataclass(frozen=True, slots=True)
class ScrapedStream:
    """A probe's stream and the scrapes taken around it (None where one could not be read)."""

    result: ProbeResult
    before: ServerMetrics | None
    after: ServerMetrics | None

    @property
    def scrapes(self) -> tuple[ServerMetrics, ServerMetrics] | None:
        """Both scrapes, or None unless both were read (`ProbeResult.scrapes`)."""
        if self.before is None or self.after is None:
            return None
        return self.before, self.after


async def stream_between_scrapes(
    client: httpx.AsyncClient,
    fetch: Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]],
    path: str,
    payload: dict[str, Any],
    parse: Callable[[str], ChunkUpdate],
    *,
    clock: Callable[[], float],
    wall: Callable[[], float],
) -> ScrapedStream:
    """Scrape, stream one completion (`stream_probe`), then scrape again once the server has
    counted the probe's tokens (`settled_scrape`); no scrape after when none came before.

    Raises:
        SourceError: Typed, from the stream (a failed scrape is None, not an error).
    """
    before = await metrics_or_none(client, fetch)
    result = await stream_probe(client, path, payload, parse, clock=clock, wall=wall)
    after = None
    if before is not None:
        tokens = result.chunks[-1].completion_tokens
        after = await settled_scrape(client, fetch, before, tokens)
    return ScrapedStream(result, before, after)
