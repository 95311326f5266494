"""Several workers' `/metrics` as one server's (behind a router: `--metrics-url`).

Each worker's counters advance by their own deltas, with their own reset detection, and those
deltas are summed into running totals: a sum of counters is never differenced across scrapes, so
a worker that restarts (its counters back near 0) or drops out adds no negative and no spike.
A worker adds its delta only between two consecutive scrapes that both read it; one that comes
back after failed scrapes starts again from its new reading (what it did meanwhile is not in the
sums, which were marked partial). Gauges are combined over the workers read at this scrape
(docs/metrics.md, "Behind a router").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from types import MappingProxyType
from typing import Any

from specmon.analysis.rates import COUNTER_FIELDS, any_reset, counter_delta
from specmon.model import Histogram, ServerMetrics, WorkerStatus

SUMMED_GAUGES = ("gen_throughput", "num_running_reqs", "num_queue_reqs")
"""Gauges of the whole server: the workers' throughput and requests add up."""
MEAN_GAUGES = ("spec_accept_length", "spec_accept_rate", "spec_num_steps", "spec_num_draft_tokens")
"""Gauges of each worker's speculation: the mean over the workers read."""
MAX_GAUGES = ("token_usage", "process_start_time")
"""The fullest worker's KV cache; the latest start (a worker that restarted moves it on)."""
HISTOGRAMS = ("ttft_seconds", "itl_seconds")


@dataclass(frozen=True, slots=True)
class WorkerScrape:
    """One worker's answer at one scrape of them all."""

    url: str
    metrics: ServerMetrics | None
    """None when it could not be read."""
    error: str | None = None
    """Why it could not be read."""


@dataclass(frozen=True, slots=True)
class WorkerSums:
    """The summed figures so far and what the next scrape's deltas start from."""

    metrics: ServerMetrics
    """The workers as one server: running totals, combined gauges, every worker's status."""
    last: Mapping[str, ServerMetrics]
    """Each worker read at this scrape: its reading, for its next delta."""


def add_scrapes(
    previous: WorkerSums | None, scrapes: Sequence[WorkerScrape], wall: float
) -> WorkerSums:
    """The sums after one scrape of every worker.

    Args:
        previous: The sums after the previous scrape; None at the first, whose totals are the
            sum of the workers' readings then (so the totals look like one server's counters).
        scrapes: Every worker, read or not, in the configured order.
        wall: Wall time of this scrape (when a worker that fails now went down).
    """
    read = {s.url: s.metrics for s in scrapes if s.metrics is not None}
    last = previous.last if previous is not None else {}
    was_down = {w.url: w for w in previous.metrics.workers if not w.up} if previous else {}
    statuses = tuple(
        WorkerStatus(s.url, reset=s.url in last and restarted(last[s.url], s.metrics))
        if s.metrics is not None
        else WorkerStatus(
            s.url,
            s.error or "not read",
            down_since=(was_down[s.url].down_since if s.url in was_down else wall),
        )
        for s in scrapes
    )
    totals: dict[str, Any] = {}  # ServerMetrics' fields by name
    if previous is None:
        readings = list(read.values())
        for name in COUNTER_FIELDS:
            totals[name] = _sum_values(getattr(m, name) for m in readings)
        totals["spec_accepted_per_position"] = _sum_positions(
            m.spec_accepted_per_position for m in readings
        )
        for name in HISTOGRAMS:
            totals[name] = _sum_histograms(getattr(m, name) for m in readings)
    else:
        pairs = [(last[url], m) for url, m in read.items() if url in last]
        before = previous.metrics
        for name in COUNTER_FIELDS:
            deltas = (_delta(getattr(b, name), getattr(a, name)) for b, a in pairs)
            totals[name] = _sum_values((getattr(before, name), *deltas))
        totals["spec_accepted_per_position"] = _sum_positions(
            (
                before.spec_accepted_per_position,
                *(_position_delta(b, a) for b, a in pairs),
            )
        )
        for name in HISTOGRAMS:
            totals[name] = _sum_histograms(
                (
                    getattr(before, name),
                    *(_histogram_delta(getattr(b, name), getattr(a, name)) for b, a in pairs),
                )
            )
    now = list(read.values())
    for name in SUMMED_GAUGES:
        totals[name] = _sum_values(getattr(m, name) for m in now)
    for name in MEAN_GAUGES:
        values = [v for m in now if (v := getattr(m, name)) is not None]
        totals[name] = fmean(values) if values else None
    for name in MAX_GAUGES:
        values = [v for m in now if (v := getattr(m, name)) is not None]
        totals[name] = max(values) if values else None
    families = frozenset().union(*(m.families for m in now))
    metrics = dataclasses.replace(ServerMetrics(), **totals, families=families, workers=statuses)
    return WorkerSums(metrics, MappingProxyType(dict(read)))


def restarted(before: ServerMetrics, after: ServerMetrics) -> bool:
    """Whether a worker restarted between two consecutive scrapes: a counter went down, or a
    counter family it served is gone (SGLang's labelled counters are exported from their first
    observation on: a restarted worker that has served nothing yet has none)."""
    return any_reset(before, after) or any(
        getattr(before, name) is not None and getattr(after, name) is None
        for name in COUNTER_FIELDS
    )


def _sum_values(values: Iterable[float | None]) -> float | None:
    """The sum of the known values; None when none is known (unknown, not zero)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _delta(before: float | None, after: float | None) -> float | None:
    """A worker's Δ of a counter between two scrapes that both read it. A family it did not
    serve before counts from 0 (a labelled counter appears at its first increment: SGLang's
    token counters at the first request)."""
    delta = counter_delta(0.0 if before is None else before, after)
    return None if delta is None else delta.value


def _position_delta(before: ServerMetrics, after: ServerMetrics) -> tuple[float, ...] | None:
    """A worker's Δ accepted tokens by draft position (llama.cpp writes the family at its first
    draft: a position it did not have before counts from 0)."""
    if after.spec_accepted_per_position is None:
        return None
    earlier = before.spec_accepted_per_position or ()
    earlier = (*earlier, *(0.0,) * (len(after.spec_accepted_per_position) - len(earlier)))
    deltas = [
        counter_delta(b, a) for b, a in zip(earlier, after.spec_accepted_per_position, strict=False)
    ]
    return tuple(d.value for d in deltas if d is not None)


def _sum_positions(tuples: Iterable[tuple[float, ...] | None]) -> tuple[float, ...] | None:
    """Position by position, the sum of the known tuples (the longest sets the length)."""
    known = [t for t in tuples if t is not None]
    if not known:
        return None
    width = max(len(t) for t in known)
    return tuple(sum(t[i] for t in known if i < len(t)) for i in range(width))


def _histogram_delta(before: Histogram | None, after: Histogram | None) -> Histogram | None:
    """A worker's histogram observations between two scrapes; a count that went down means it
    restarted (the observations since are `after` itself), as does one it did not serve
    before; other bounds: not comparable."""
    if after is None:
        return None
    if before is None:
        return after
    if [le for le, _ in before.buckets] != [le for le, _ in after.buckets]:
        return None
    if after.count < before.count:
        return after
    return Histogram(
        tuple((le, a - b) for (le, a), (_, b) in zip(after.buckets, before.buckets, strict=True)),
        after.sum - before.sum,
        after.count - before.count,
    )


def _sum_histograms(histograms: Iterable[Histogram | None]) -> Histogram | None:
    """Bucket by bucket, the sum of the known histograms that share the first one's bounds (a
    worker with other bounds is left out of it: its buckets cannot be added)."""
    known = [h for h in histograms if h is not None]
    if not known:
        return None
    bounds = [le for le, _ in known[0].buckets]
    same = [h for h in known if [le for le, _ in h.buckets] == bounds]
    return Histogram(
        tuple((le, sum(h.buckets[i][1] for h in same)) for i, le in enumerate(bounds)),
        sum(h.sum for h in same),
        sum(h.count for h in same),
    )
