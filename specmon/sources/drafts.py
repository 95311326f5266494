"""What the vLLM and llama.cpp backends share: draft counters, and probes between two scrapes.

Both servers count speculation the same way (`spec_decode_num_drafts_total`,
`…_num_draft_tokens_total`, `…_num_accepted_tokens_total`, `…_per_pos_total{position}`), and
neither reports per-request acceptance in its stream as SGLang does, so their probes scrape
`/metrics` before and after the stream: when no other request ran meanwhile, the counters'
deltas are the server's own account of the probe.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable

import httpx

from specmon.analysis.rates import counter_delta, draft_acceptance
from specmon.errors import SourceError
from specmon.model import ProbeResult, ServerMetrics
from specmon.sources.metrics import Series


def per_position(series: list[Series]) -> tuple[float, ...] | None:
    """Accepted tokens by draft position (summed over engines); None when there are none."""
    by_position: dict[int, float] = defaultdict(float)
    for s in series:
        position = dict(s.labels).get("position", "")
        if position.isdigit():
            by_position[int(position)] += s.value
    if not by_position:
        return None
    return tuple(by_position.get(i, 0.0) for i in range(max(by_position) + 1))


async def metrics_or_none(
    client: httpx.AsyncClient, fetch: Callable[[httpx.AsyncClient], Awaitable[ServerMetrics]]
) -> ServerMetrics | None:
    """One scrape, or None when metrics are off or the scrape failed (they are optional)."""
    try:
        return await fetch(client)
    except SourceError:
        return None


def exclusive_accept_length(
    before: ServerMetrics | None,
    after: ServerMetrics | None,
    result: ProbeResult,
    *,
    counts_requests: bool,
) -> float | None:
    """The server's `1 + Δaccepted/Δdrafts` over a probe, if the probe ran alone.

    Alone means the generation counter grew by exactly the probe's tokens (and, where the server
    counts requests, by one finished request); otherwise the deltas mix in other traffic.
    """
    if before is None or after is None or not result.chunks:
        return None
    generated = counter_delta(before.generation_tokens_total, after.generation_tokens_total)
    if generated is None or generated.value != result.chunks[-1].completion_tokens:
        return None
    if counts_requests:
        finished = counter_delta(before.num_requests_total, after.num_requests_total)
        if finished is None or finished.value != 1:
            return None
    acceptance = draft_acceptance(before, after)
    return None if acceptance is None else acceptance.accept_length
