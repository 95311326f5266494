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

import httpx

from specmon.errors import SourceError
from specmon.model import ServerMetrics
from specmon.sources.metrics import Series


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
