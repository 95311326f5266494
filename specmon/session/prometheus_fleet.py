"""The fleet's rows read from a Prometheus server, one reading at a time (`specmon --prometheus`).

The dashboard does no I/O of its own: the table's app asks this for a reading and draws what it
brings, the rows worst first or the one-line error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from specmon.session.fleet_row import FleetRow, worst_first
from specmon.session.prometheus_rows import FAMILIES, LABELLED, prometheus_rows
from specmon.sources.prometheus_api import PrometheusApi, PrometheusError

EMPTY = "no specmon series (is a specmon exporter scraped by this Prometheus?)"
"""The one-line error of an empty result."""


@dataclass(frozen=True, slots=True)
class FleetReading:
    """One reading: the rows (worst first), or why there are none."""

    rows: tuple[FleetRow, ...] | None
    """None when the reading failed: the rows drawn before stay."""
    error: str | None


class PrometheusFleet:
    """Every family once a reading; a server seen before and gone from Prometheus stays a row
    (said stale, not dropped)."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self._api = PrometheusApi(client)
        self._url = url
        self._seen: set[str] = set()

    async def read(self) -> FleetReading:
        try:
            snapshot = await self._api.instant(FAMILIES, LABELLED)
        except PrometheusError as exc:
            return FleetReading(None, str(exc))
        rows: Sequence[FleetRow] = prometheus_rows(snapshot, self._seen)
        self._seen.update(r.url for r in rows)
        return FleetReading(tuple(worst_first(rows)), None if rows else f"{self._url}: {EMPTY}")
