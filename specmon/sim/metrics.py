"""A small metric store and its exposition, shaped like SGLang's multiprocess `/metrics`.

SGLang serves `prometheus_client`'s multiprocess collector: no `_created` samples, labels sorted
alphabetically, histogram samples in `_sum`, `_bucket`..., `_count` order, `pid` on gauges in
mode "all", and a labelled family is absent until something writes to it. The registry of
`prometheus_client` cannot produce that ordering, so the text is written here; value formatting
reuses `prometheus_client`'s own `floatToGoString` so numbers read exactly like the real thing.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from prometheus_client.utils import floatToGoString as _untyped_float_to_go

from specmon.sim.metric_defs import SCHED, TOK, Family

LabelKey = tuple[tuple[str, str], ...]

# prometheus_client's own number formatting ("1.0", "3.6413008e+07", "NaN", "+Inf").
go_float = cast(Callable[[float], str], _untyped_float_to_go)

CONTENT_TYPE_TEXT = "text/plain; version=0.0.4; charset=utf-8"
CONTENT_TYPE_OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


@dataclass
class _Histogram:
    buckets: tuple[float, ...]
    counts: list[float] = field(default_factory=list)  # per bucket, not cumulative; last = +Inf
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0.0] * (len(self.buckets) + 1)

    def add(self, value: float, bucket_of: float, count: float) -> None:
        self.total += value
        self.counts[bisect.bisect_left(self.buckets, bucket_of)] += count


class MetricStore:
    """Gauges, counters and histograms of the families one version defines.

    Writes name a family and pass every label they know; labels the version's family does not
    carry are dropped (so series that differ only by them merge, as in older SGLang), and writes
    to families the version does not define are ignored.
    """

    def __init__(self, families: tuple[Family, ...]) -> None:
        self._families = {f.name: f for f in families}
        self._order = [f.name for f in families]
        self._values: dict[str, dict[LabelKey, float]] = {}
        self._hists: dict[str, dict[LabelKey, _Histogram]] = {}

    def defines(self, name: str) -> bool:
        """Whether this version exposes family `name`."""
        return name in self._families

    def _key(self, family: Family, labels: dict[str, str]) -> LabelKey:
        return tuple((k, labels[k]) for k in family.labels if k in labels)

    def set(self, name: str, value: float, **labels: str) -> None:
        """Set a gauge."""
        family = self._families.get(name)
        if family is not None:
            self._values.setdefault(name, {})[self._key(family, labels)] = float(value)

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        """Increase a counter (or a gauge in livesum mode)."""
        family = self._families.get(name)
        if family is not None:
            series = self._values.setdefault(name, {})
            key = self._key(family, labels)
            series[key] = series.get(key, 0.0) + amount

    def observe(
        self,
        name: str,
        value: float,
        *,
        bucket_of: float | None = None,
        count: float = 1.0,
        **labels: str,
    ) -> None:
        """Observe a histogram sample.

        Args:
            name: Family name.
            value: Added to `_sum`.
            bucket_of: The value that picks the bucket (default `value`); SGLang's inter-token
                latency adds the step interval to `_sum` but buckets interval / n, n times.
            count: How many observations the bucket (and `_count`) gains.
            **labels: Label values.
        """
        family = self._families.get(name)
        if family is None:
            return
        series = self._hists.setdefault(name, {})
        key = self._key(family, labels)
        hist = series.get(key)
        if hist is None:
            hist = series[key] = _Histogram(family.buckets)
        hist.add(value, value if bucket_of is None else bucket_of, count)

    def value(self, name: str, **labels: str) -> float | None:
        """The current value of a gauge or counter series (None if never written)."""
        family = self._families.get(name)
        if family is None:
            return None
        return self._values.get(name, {}).get(self._key(family, labels))

    def render(
        self,
        base: dict[str, dict[str, str]],
        pid: str,
        *,
        openmetrics: bool = False,
    ) -> str:
        """The exposition text.

        Args:
            base: Base labels per scope (`SCHED`, `TOK`).
            pid: The writer pid put on gauges in multiprocess mode "all".
            openmetrics: OpenMetrics 1.0 instead of text 0.0.4 (sample names then use `_`
                instead of `:`, as prometheus_client >= 0.26 escapes them).

        Returns:
            The body, ending in a newline (and `# EOF` for OpenMetrics).
        """
        out: list[str] = []
        for name in self._order:
            family = self._families[name]
            if name not in self._values and name not in self._hists:
                continue
            meta_name = name
            if openmetrics and family.kind == "counter":
                meta_name = name.removesuffix("_total")
            out.append(f"# HELP {meta_name} {_escape_help(family.help)}")
            out.append(f"# TYPE {meta_name} {family.kind}")
            sample = name.replace(":", "_") if openmetrics else name
            scope_labels = base.get(family.scope, {}) if family.scope in (SCHED, TOK) else {}
            if family.kind == "histogram":
                for key, hist in self._hists.get(name, {}).items():
                    labels = {**scope_labels, **dict(key)}
                    out.extend(_histogram_lines(sample, labels, hist))
            else:
                for key, val in self._values.get(name, {}).items():
                    labels = {**scope_labels, **dict(key)}
                    if family.pid:
                        labels["pid"] = pid
                    out.append(f"{sample}{_labels(labels)} {go_float(val)}")
        if openmetrics:
            out.append("# EOF")
        return "\n".join(out) + "\n"


def _histogram_lines(sample: str, labels: dict[str, str], hist: _Histogram) -> list[str]:
    lines = [f"{sample}_sum{_labels(labels)} {go_float(hist.total)}"]
    running = 0.0
    bounds = [go_float(b) for b in hist.buckets] + ["+Inf"]
    for bound, count in zip(bounds, hist.counts, strict=True):
        running += count
        lines.append(f"{sample}_bucket{_labels({**labels, 'le': bound})} {go_float(running)}")
    lines.append(f"{sample}_count{_labels(labels)} {go_float(running)}")
    return lines


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape_value(v)}"' for k, v in sorted(labels.items()))
    return "{" + inner + "}"


def _escape_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")
