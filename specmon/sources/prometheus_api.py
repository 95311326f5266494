"""specmon's exporter series as a Prometheus server holds them: its HTTP API, read as hostile.

`specmon --prometheus URL` builds the fleet table from what Prometheus scraped of one or more
`specmon exporter`s instead of polling each server: one instant query for all the gauges read by
target and one per labelled family for the whole table (`instant`), whatever the number of
servers, and a range query for one row's history
(`history`). Every byte of a reply is a stranger's: the body is capped (`http.get`), its JSON
read with the depth limit (`http.parse_json`), its numbers only when finite and in range
(`http.json_float`), its label values through `safe_text`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import httpx

from specmon.errors import MalformedResponse, SourceError
from specmon.safe_text import safe_text
from specmon.sources.http import JSON_NUMBER_LIMIT, get, json_float, parse_json

MAX_REPLY_BYTES = 8 * 2**20
"""The largest reply read: 500 targets' samples of one family are some 100 kB."""
MAX_TARGETS = 5000
"""Series of one family kept (of each family, in a query of several); more are refused (a query
gone wrong, not a fleet)."""
LABEL_LIMIT = 300
"""Characters of a label value kept."""


class PrometheusError(SourceError):
    """Prometheus unreachable, or a reply that is not a Prometheus one: one line."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One series' value now, with its labels (safe text)."""

    labels: Mapping[str, str]
    """Read-only: the same label set's mapping is shared by its samples of every reading."""
    value: float | None
    """None for NaN, the infinities, or a number out of range: not known."""


@dataclass(slots=True)
class Snapshot:
    """Every family's samples of one instant, by target (the exporter's `target` label)."""

    families: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """family -> target -> value."""
    labelled: dict[str, list[Sample]] = field(default_factory=dict)
    """family -> its samples with all their labels (info, baseline state)."""

    def value(self, family: str, target: str) -> float | None:
        """The family's value for a target; None when Prometheus has no sample of it."""
        return self.families.get(family, {}).get(target)

    def targets(self) -> set[str]:
        """Every target any family names."""
        return {t for values in self.families.values() for t in values}


class PrometheusApi:
    """A Prometheus server's query API over one client."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        """Args:
        client: Its base URL is the Prometheus server's (http://host:9090).
        """
        self.client = client

    async def query(self, promql: str, families: int = 1, **params: str) -> list[Any]:
        """The `result` of `/api/v1/query` (instant) or, with start/end/step, of
        `/api/v1/query_range`, at most MAX_TARGETS series a family (`families` of them asked);
        a PrometheusError on anything else."""
        path = "/api/v1/query_range" if "step" in params else "/api/v1/query"
        where = f"{self.client.base_url}{path}"
        try:
            response = await get(
                self.client, path, limit=MAX_REPLY_BYTES, params={"query": promql, **params}
            )
        except SourceError as exc:
            raise PrometheusError(f"Prometheus at {self.client.base_url}: {exc}") from None
        try:  # off the event loop: 500 targets' reply is tens of ms of parsing
            body = await asyncio.to_thread(parse_json, response)
        except MalformedResponse:
            raise PrometheusError(
                f"{where}: not a Prometheus reply (the body is not JSON)"
            ) from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error") if isinstance(body, dict) else None
            detail = f": {safe_text(error, limit=200)}" if isinstance(error, str) else ""
            raise PrometheusError(f"{where}: not a successful Prometheus reply{detail}")
        data = body.get("data")
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, list):
            raise PrometheusError(f"{where}: not a Prometheus reply (no data.result list)")
        if len(result) > MAX_TARGETS * families:
            raise PrometheusError(
                f"{where}: {len(result)} series of {promql}; at most {MAX_TARGETS * families}"
            )
        return result

    async def instant(
        self, gauges: Iterable[str], labelled: Mapping[str, Sequence[str]] = MappingProxyType({})
    ) -> Snapshot:
        """One instant query for all the gauges and one per labelled family, for every target
        at once, each reduced by Prometheus to the labels read (`max by (target, …)`: no job,
        instance or other labels to send and parse). Each query is a request and a reply handed
        to a thread to parse: 3 a reading instead of 10 took one reading at 500 servers from
        ~48 to ~40 ms of CPU (benchmarks/prometheus_fleet.py --readings-only).

        Args:
            gauges: Families read by their `target` label alone.
            labelled: Families whose other labels matter too, with those labels.
        """
        snapshot = Snapshot()
        gauges = tuple(gauges)
        for family in gauges:
            snapshot.families[family] = {}
        if gauges:
            result = await self.query(by_target_each(gauges), families=len(gauges))
            for sample in _samples(result):
                values = snapshot.families.get(sample.labels.get("__name__", ""))
                target = sample.labels.get("target")
                if values is not None and target:
                    values[target] = sample.value
        for family, labels in labelled.items():
            result = await self.query(by_target(family, labels))
            snapshot.labelled[family] = _samples(result)
        return snapshot

    async def histories(
        self, families: Sequence[str], target: str, start: float, end: float, step: float
    ) -> dict[str, list[tuple[float, float]]]:
        """One target's points of several families, by family, in one range query (each
        series reduced to its family's name: `max by (__name__)`); a family Prometheus holds
        no points of has none."""
        matchers = f'__name__=~"{"|".join(families)}",target="{_matcher(target)}"'
        query = f"max by (__name__) ({{{matchers}}})"
        result = await self.query(
            query, families=len(families), start=f"{start:f}", end=f"{end:f}", step=f"{step:g}"
        )
        out: dict[str, list[tuple[float, float]]] = {family: [] for family in families}
        for series in result:
            metric = series.get("metric") if isinstance(series, dict) else None
            name = metric.get("__name__") if isinstance(metric, dict) else None
            if isinstance(name, str) and name in out:
                out[name] = sorted(out[name] + _points([series]))
        return out


def by_target(family: str, labels: Sequence[str] = ()) -> str:
    """The PromQL of a family's samples by target (and `labels`), one per target."""
    return f"max by ({', '.join(('target', *labels))}) ({family})"


def by_target_each(families: Sequence[str]) -> str:
    """The PromQL of several families' samples by target, one per family and target (each
    sample keeps its family's name: `__name__`)."""
    return f'max by (__name__, target) ({{__name__=~"{"|".join(families)}"}})'


def _matcher(value: str) -> str:
    """A label value inside a PromQL string ("…"): its backslashes and quotes escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _points(result: list[Any]) -> list[tuple[float, float]]:
    """The (unix time, value) points of a range query's series, oldest first; the points that
    are not finite numbers are left out."""
    points: list[tuple[float, float]] = []
    for series in result:
        values = series.get("values") if isinstance(series, dict) else None
        for pair in values if isinstance(values, list) else ():
            point = _point(pair)
            if point is not None and point[1] is not None:
                points.append((point[0], point[1]))
    return sorted(points)


def _samples(result: list[Any]) -> list[Sample]:
    samples = []
    for series in result:
        if not isinstance(series, dict):
            continue
        metric = series.get("metric")
        pair = series.get("value")
        # [unix time, "value"]: the time is not read (an instant query's is the query's).
        if not isinstance(metric, dict) or not isinstance(pair, list) or len(pair) != 2:
            continue
        text = pair[1]
        if type(pair[0]) not in (int, float) or not isinstance(text, str):
            continue
        try:
            labels = _labels(tuple(metric.items()))
        except TypeError:  # a list or an object among the values: unhashable, no label
            labels = _labels(tuple((k, v) for k, v in metric.items() if isinstance(v, str)))
        samples.append(Sample(labels, _number(text)))
    return samples


def _number(text: str) -> float | None:
    """A sample's value ("152.3", "NaN", "+Inf") as `json_float` takes numbers: None when not
    a finite one within `JSON_NUMBER_LIMIT` (NaN fails both comparisons)."""
    try:
        value = float(text[:40])
    except ValueError:
        return None
    return value if -JSON_NUMBER_LIMIT <= value <= JSON_NUMBER_LIMIT else None


@functools.lru_cache(maxsize=16384)
def _labels(items: tuple[tuple[Any, Any], ...]) -> Mapping[str, str]:
    """A series' labels as safe text, the strings among them; the same series come at every
    reading (500 servers: their label sets were a fifth of a reading's parsing)."""
    return MappingProxyType(
        {_label(k): _label(v) for k, v in items if isinstance(k, str) and isinstance(v, str)}
    )


@functools.lru_cache(maxsize=16384)
def _label(text: str) -> str:
    """`safe_text` of a label name or value; the same targets come at every reading."""
    return safe_text(text, limit=LABEL_LIMIT)


def _point(pair: Any) -> tuple[float, float | None] | None:
    """[unix time, "value"] as numbers: the value None when not a finite one."""
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        return None
    when = json_float(pair[0])
    if when is None:
        return None
    return when, _number(pair[1])
