"""The fleet's rows read from a Prometheus server, one reading at a time (`specmon --prometheus`),
and the highlighted row's history.

The dashboard does no I/O of its own: the table's app asks this for a reading and draws what it
brings, the rows worst first or the one-line error; and for the history of the one server the
cursor is on (`history`: one range query, never one per server).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx

from specmon.analysis.catalogue import Figure, figure
from specmon.session.fleet_row import FleetRow, worst_first
from specmon.session.prometheus_rows import FAMILIES, LABELLED, STATE, prometheus_rows
from specmon.sources.prometheus_api import PrometheusApi, PrometheusError, Snapshot

EMPTY = "no specmon series (is a specmon exporter scraped by this Prometheus?)"
"""The one-line error of an empty result."""
FIGURES_EVERY_S = 5.0
"""Seconds between two readings of every family: the probe's figures and the speedup change
only when a probe ends (every 10 s by default), the info and the baseline state more rarely;
whether each server is up and probing (`STATE`) is read at every reading. At 500 servers the
full reading is some 6,000 series, the state alone 1,000 (docs/performance.md)."""
NO_HISTORY = "no history in Prometheus for this server"
"""The history line of a server whose range query brought no point."""
HISTORY_SPAN_S = 15 * 60.0
"""The span of a row's history: the last 15 minutes."""
HISTORY_FIGURES = (figure("speedup"), figure("decode tok/s"), figure("accept length"))
"""The figures a row's history plots, as the row shows them."""
INTERVAL = (figure("speedup low"), figure("speedup high"))
"""The speedup's interval, read with it (its latest ends are said beside the line)."""


@dataclass(frozen=True, slots=True)
class FleetReading:
    """One reading: the rows (worst first), or why there are none."""

    rows: tuple[FleetRow, ...] | None
    """None when the reading failed: the rows drawn before stay."""
    error: str | None


class PrometheusFleet:
    """Whether each server is up and probing at every reading, the rest every
    `FIGURES_EVERY_S`; a server seen before and gone from Prometheus stays a row (said stale,
    not dropped)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        *,
        figures_every: float = FIGURES_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Args:
        client: Its base URL is the Prometheus server's.
        url: The Prometheus server, as the errors name it.
        figures_every: Seconds between two readings of every family (`FIGURES_EVERY_S`).
        clock: Seconds, for `figures_every` (tests give theirs).
        """
        self._api = PrometheusApi(client)
        self._url = url
        self._seen: set[str] = set()
        self._figures_every = figures_every
        self._clock = clock
        self._snapshot: Snapshot | None = None
        """The last reading of every family, its `STATE` gauges replaced by each reading's."""
        self._read_at = 0.0
        self._last: FleetReading | None = None

    async def history(self, target: str, points: int) -> RowHistory:
        """One server's history (`read_history`): the highlighted row's, not every row's."""
        return await read_history(self._api, target, points)

    async def read(self) -> FleetReading:
        """Every family when `figures_every` has passed since they were read (or none was),
        else the `STATE` gauges alone: the rows of the same reading again, unbuilt, when those
        did not change."""
        now = self._clock()
        snapshot = self._snapshot
        try:
            if snapshot is None or now - self._read_at >= self._figures_every:
                snapshot = await self._api.instant(FAMILIES, LABELLED)
                self._snapshot, self._read_at = snapshot, now
            else:
                state = (await self._api.instant(STATE)).families
                if self._last is not None and all(
                    state[f] == snapshot.families.get(f) for f in STATE
                ):
                    return self._last
                snapshot.families.update(state)
        except PrometheusError as exc:
            return FleetReading(None, str(exc))
        rows: Sequence[FleetRow] = prometheus_rows(snapshot, self._seen)
        self._seen.update(r.url for r in rows)
        error = None if rows else f"{self._url}: {EMPTY}"
        self._last = FleetReading(tuple(worst_first(rows)), error)
        return self._last


@dataclass(frozen=True, slots=True)
class RowHistory:
    """One server's figures over the last `HISTORY_SPAN_S` (range query), or why there are none."""

    target: str
    start: float
    end: float
    step: float
    """Seconds between two points (the span over the points asked)."""
    points: dict[str, tuple[tuple[float, float], ...]]
    """Figure key -> (unix time, value in the figure's unit), oldest first; each figure of
    `HISTORY_FIGURES` and `INTERVAL`, none where Prometheus holds no point of it."""
    error: str | None
    """The range query's one-line error, or `NO_HISTORY`; None when any figure has points."""


async def read_history(
    api: PrometheusApi, target: str, points: int, now: float | None = None
) -> RowHistory:
    """The last `HISTORY_SPAN_S` of one target's figures at about `points` points (a step of
    whole seconds, at least 1), in one range query."""
    end = time.time() if now is None else now
    step = float(max(1, math.ceil(HISTORY_SPAN_S / max(1, points))))
    start = end - HISTORY_SPAN_S
    figures = (*HISTORY_FIGURES, *INTERVAL)
    by_family: dict[str, Figure] = {f.prometheus or "": f for f in figures}
    try:
        read = await api.histories(tuple(by_family), target, start, end, step)
    except PrometheusError as exc:
        return RowHistory(target, start, end, step, {}, str(exc))
    scaled = {
        by_family[family].key: tuple((t, v / by_family[family].prometheus_scale) for t, v in got)
        for family, got in read.items()
        if got
    }
    return RowHistory(target, start, end, step, scaled, None if scaled else NO_HISTORY)
