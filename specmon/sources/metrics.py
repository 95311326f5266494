"""SGLang's `/metrics`: prometheus-client's text parser, then aggregation over ranks.

Both spellings of names are accepted: `sglang:x` (plain text format) and `sglang_x`
(OpenMetrics negotiation escapes the colon). Families are matched on sample names, because in
OpenMetrics output the `# HELP`/`# TYPE` lines and the samples disagree on the spelling.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from specmon.errors import HttpStatus, MalformedResponse, MetricsDisabled, ResponseTooLarge
from specmon.model import Histogram, ServerMetrics
from specmon.sources.http import get, off_loop
from specmon.sources.scrape_memo import ParsedSample, ScrapeMemo

PREFIXES = ("sglang:", "sglang_")

# Labels that only say which replica wrote a series. Scheduler metrics are written by every
# tp/pp/moe-ep rank when `--enable-metrics-for-all-schedulers` is on: copies, not parts, so one
# rank (the lowest) speaks for its data-parallel group. `dp_rank` groups are real parts.
REPLICA_LABELS = ("tp_rank", "pp_rank", "moe_ep_rank")


Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Series:
    """One parsed sample: short name (prefix stripped), labels and value."""

    name: str
    labels: Labels
    value: float
    group: Labels
    """The labels but the replica ones (`REPLICA_LABELS`): which group of copies it is of."""


# The families specmon reads from SGLang (short names; samples' suffixes such as `_bucket` match).
# A real 0.5.17 scrape is 58–67 KB of about 170 families; parsing only these is ~5x cheaper.
WANTED = (
    "generation_tokens_total",
    "prompt_tokens_total",
    "num_requests_total",
    "spec_verify_calls_total",
    "realtime_tokens_total",
    "cuda_graph_passes_total",
    "gen_throughput",
    "spec_accept_length",
    "spec_accept_rate",
    "spec_num_steps",
    "spec_num_draft_tokens",
    "num_running_reqs",
    "num_queue_reqs",
    "token_usage",
    "time_to_first_token_seconds",
    "inter_token_latency_seconds",
)


MAX_SAMPLES = 4_000
"""The most samples of the wanted families one scrape may hold. A real SGLang 0.5.17 /metrics
holds ~40 (its two histograms' buckets most of them), ~2,000 at DP 8 with every scheduler's
copies; a runaway label (a series per request) or a hostile server can send 10 MB of them,
~190,000 lines, which took prometheus-client's parser ~6 s. Beyond this the scrape is refused
(`ResponseTooLarge`) after one pass over the text, before any is parsed."""


def wanted_text(text: str, prefixes: tuple[str, ...], wanted: tuple[str, ...]) -> str:
    """The sample lines of the wanted families (short names under `prefixes`; comments dropped:
    samples are matched by name), or the whole text when there are none, so that a body that
    is not exposition format still fails to parse.

    Raises:
        ResponseTooLarge: More than `MAX_SAMPLES` lines of the wanted families.
    """
    names, head, heads = _names(prefixes, wanted)
    # Lines end at "\n" only, as for prometheus-client: a label value may hold a "\r".
    # A line's first `head` characters rule most out (comments, other families) at one look,
    # before it is tried against each name.
    lines = [line for line in text.split("\n") if line[:head] in heads and line.startswith(names)]
    if len(lines) > MAX_SAMPLES:
        raise ResponseTooLarge(
            f"/metrics holds {len(lines):,} samples of the series specmon reads (more than "
            f"{MAX_SAMPLES:,}: a label that takes a new value per request?); refused"
        )
    return "".join(line + "\n" for line in lines) or text


@functools.cache
def _names(
    prefixes: tuple[str, ...], wanted: tuple[str, ...]
) -> tuple[tuple[str, ...], int, frozenset[str]]:
    """The full names of the wanted families, the length of the shortest, and every name's
    start of that length: a line that starts with a name starts with one of those."""
    names = tuple(prefix + name for prefix in prefixes for name in wanted)
    head = min(len(name) for name in names)
    return names, head, frozenset(name[:head] for name in names)


_LINES = ScrapeMemo(keep=16_384)
"""Lines parsed already, shared by every server's scrapes (bounded): between two scrapes most
lines (histogram buckets, request counts) stay as they were, and servers of one model serve the
same label sets."""


def parse_scrape(text: str, prefixes: tuple[str, ...] = PREFIXES) -> Scrape:
    """Parse exposition text into the series whose names start with one of `prefixes` (SGLang's
    by default), prefix stripped, ignoring other families.

    Raises:
        MalformedResponse: The text is not Prometheus exposition format.
    """
    by_name: dict[str, list[Series]] = defaultdict(list)
    try:
        samples = _LINES.parse(text)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise MalformedResponse(f"/metrics is not Prometheus text format ({exc})") from None
    for sample in samples:
        series = _SERIES.of(sample, prefixes)
        if series is not None:
            by_name[series.name].append(series)
    return Scrape(dict(by_name))


class _SeriesMemo:
    """Each sample's `Series`, made once: `_LINES` hands back the same `ParsedSample` for a
    line it has seen (most of a scrape's), and the same labels for every line of one series,
    so their sorted labels and the Series are not made again at every scrape (at 1 Hz over a
    fleet, with the probes' load readings, ~30 scrapes a second). Objects are held beside
    their ids, so an id stays theirs while it is a key."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._series: dict[int, tuple[ParsedSample, tuple[str, ...], Series | None]] = {}
        self._labels: dict[int, tuple[dict[str, str], tuple[Labels, Labels]]] = {}

    def of(self, sample: ParsedSample, prefixes: tuple[str, ...]) -> Series | None:
        """`sample` under its short name (None: not under `prefixes`), labels sorted."""
        known = self._series.get(id(sample))
        if known is not None and known[0] is sample and known[1] == prefixes:
            return known[2]
        short = _short_name(sample.name, prefixes)
        series = None
        if short is not None:
            labels, group = self._sorted(sample.labels)
            series = Series(short, labels, sample.value, group)
        if len(self._series) >= self.keep:
            self._series = {}
        self._series[id(sample)] = (sample, prefixes, series)
        return series

    def _sorted(self, labels: dict[str, str]) -> tuple[Labels, Labels]:
        """The labels sorted, and without the replica ones (`Series.group`)."""
        known = self._labels.get(id(labels))
        if known is not None and known[0] is labels:
            return known[1]
        items = tuple(sorted(labels.items()))
        group = tuple((k, v) for k, v in items if k not in REPLICA_LABELS)
        if len(self._labels) >= self.keep:
            self._labels = {}
        self._labels[id(labels)] = (labels, (items, group))
        return items, group


_SERIES = _SeriesMemo(keep=4_096)
"""Room for a fleet's current samples (a server's scrape holds ~20–70 of the wanted families),
while those of lines that changed are dropped at the next start afresh."""


def _short_name(name: str, prefixes: tuple[str, ...]) -> str | None:
    for prefix in prefixes:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return None


@dataclass(frozen=True, slots=True)
class Scrape:
    """One scrape's series, by short name, and the aggregations the backends read them with."""

    by_name: dict[str, list[Series]]

    @property
    def names(self) -> frozenset[str]:
        """The series names present."""
        return frozenset(self.by_name)

    def series(self, name: str, where: dict[str, tuple[str, ...]] | None = None) -> list[Series]:
        """The series of `name` (with labels allowed by `where`), one per replica group."""
        chosen = [
            s
            for s in self.by_name.get(name, ())
            if not where or all(_label(s, k) in allowed for k, allowed in where.items())
        ]
        return list(_authority(chosen))

    def total(self, name: str, where: dict[str, tuple[str, ...]] | None = None) -> float | None:
        """Sum a counter or additive gauge over its groups; None when the family is absent."""
        chosen = self.series(name, where)
        if not chosen:
            return None
        values = [s.value for s in chosen if math.isfinite(s.value)]
        return sum(values) if values else None

    def mean(self, name: str) -> float | None:
        """Average a ratio or mean gauge over its groups; None when absent."""
        chosen = [s.value for s in self.series(name) if math.isfinite(s.value)]
        return sum(chosen) / len(chosen) if chosen else None

    def histogram(self, name: str) -> Histogram | None:
        """A histogram summed over its groups; None when a part of it is absent."""
        buckets: dict[float, float] = defaultdict(float)
        for s in self.series(name + "_bucket"):
            le = _label(s, "le")
            try:
                bound = float(le) if le is not None else math.nan
            except ValueError:
                continue
            if not math.isnan(bound):
                buckets[bound] += s.value
        total = self.total(name + "_sum")
        count = self.total(name + "_count")
        if not buckets or total is None or count is None:
            return None
        return Histogram(tuple(sorted(buckets.items())), total, count)


def _authority(group: list[Series]) -> Iterator[Series]:
    """Within series differing only by replica labels, keep those of the lowest rank."""
    if len(group) < 2:
        yield from group
        return
    by_rest: dict[Labels, list[Series]] = defaultdict(list)
    for s in group:
        by_rest[s.group].append(s)
    for members in by_rest.values():
        if len(members) == 1:  # one rank serves it (most servers): no ranks to compare
            yield members[0]
        else:
            yield min(members, key=lambda s: tuple(_rank(s, k) for k in REPLICA_LABELS))


def _rank(s: Series, label: str) -> int:
    value = _label(s, label) or "0"
    return int(value) if value.isdigit() else 0


def _label(s: Series, name: str) -> str | None:
    """A label's value (labels are a dict's items: each name once)."""
    return next((value for key, value in s.labels if key == name), None)


def metrics_from_text(text: str) -> ServerMetrics:
    """Aggregate the figures specmon uses from one scrape's text."""
    return _metrics(wanted_text(text, PREFIXES, WANTED))


# An idle server repeats itself: parsed once. Room for a fleet's servers and their baselines.
@functools.lru_cache(maxsize=64)
def _metrics(text: str) -> ServerMetrics:
    scrape = parse_scrape(text)
    decode_modes = ("decode_cuda_graph", "decode_none")
    return ServerMetrics(
        generation_tokens_total=scrape.total("generation_tokens_total"),
        prompt_tokens_total=scrape.total("prompt_tokens_total"),
        num_requests_total=scrape.total("num_requests_total"),
        spec_verify_calls_total=scrape.total("spec_verify_calls_total"),
        realtime_decode_tokens_total=scrape.total("realtime_tokens_total", {"mode": ("decode",)}),
        decode_passes_total=scrape.total("cuda_graph_passes_total", {"mode": decode_modes}),
        gen_throughput=scrape.total("gen_throughput"),
        spec_accept_length=scrape.mean("spec_accept_length"),
        spec_accept_rate=scrape.mean("spec_accept_rate"),
        spec_num_steps=scrape.mean("spec_num_steps"),
        spec_num_draft_tokens=scrape.mean("spec_num_draft_tokens"),
        num_running_reqs=scrape.total("num_running_reqs"),
        num_queue_reqs=scrape.total("num_queue_reqs"),
        token_usage=scrape.mean("token_usage"),
        ttft_seconds=scrape.histogram("time_to_first_token_seconds"),
        itl_seconds=scrape.histogram("inter_token_latency_seconds"),
        families=scrape.names,
    )


async def fetch_metrics(client: httpx.AsyncClient) -> ServerMetrics:
    """Scrape SGLang's `/metrics`.

    Raises:
        MetricsDisabled: 404, the server was started without `--enable-metrics`.
        SourceError: Any other failure, typed.
    """
    text = await fetch_text(client, "start the server with --enable-metrics")
    return _metrics(await wanted_off_loop(text, PREFIXES, WANTED))


async def wanted_off_loop(text: str, prefixes: tuple[str, ...], wanted: tuple[str, ...]) -> str:
    """`wanted_text`, in a worker thread for a body past `OFF_LOOP_CHARS`: sifting 10 MB takes
    ~60 ms of CPU, which the event loop (keys, other targets) would otherwise wait for; the
    thread gives the loop its turn every switch interval. What it returns is at most
    `MAX_SAMPLES` lines, parsed on the loop as any scrape is (the line memo is the loop's).

    Raises:
        ResponseTooLarge: More than `MAX_SAMPLES` lines of the wanted families.
    """
    return await off_loop(len(text), wanted_text, text, prefixes, wanted)


async def fetch_text(
    client: httpx.AsyncClient,
    off_hint: str,
    off_statuses: tuple[int, ...] = (404,),
    path: str = "/metrics",
) -> str:
    """`/metrics` as text (plain Accept header, so names keep their colon).

    Args:
        client: The target's client.
        off_hint: How to turn metrics on, for the MetricsDisabled message.
        off_statuses: The statuses that mean metrics are off.
        path: Where the server serves them (TensorRT-LLM: `/prometheus/metrics`).

    Raises:
        MetricsDisabled: One of `off_statuses`: the server serves no metrics.
        SourceError: Any other failure, typed.
    """
    try:
        response = await get(client, path)
    except HttpStatus as exc:
        if exc.status in off_statuses:
            raise MetricsDisabled(
                f"{client.base_url}{path}: {exc.status} — metrics are off; {off_hint}"
            ) from None
        raise
    try:
        return response.content.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedResponse(f"{client.base_url}{path}: the body is not UTF-8") from None
