"""A bounded window of /metrics scrapes and the live server figures derived from it."""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from specmon.analysis.rates import WindowAccept, any_reset, counter_delta, server_accept_length
from specmon.model import Histogram, ServerMetrics

HISTORY_S = 300.0  # the 5-minute sparkline
HISTORY_STEP_S = 5.0  # the sparkline's points: means over 5 s (each rate already spans 10 s)
RATE_SPAN_S = 10.0  # server figures are averaged over about this long
MEAN_SPAN_S = 6 * RATE_SPAN_S  # accept length, TTFT, ITL: means over enough requests
WINDOW_S = 60.0
"""The longest span a figure is read over (`MEAN_SPAN_S`: accept length and latencies over a
minute): the scrapes the window keeps, each a few KB, so memory does not grow with the
sparkline."""


@dataclass(frozen=True, slots=True)
class Rate:
    """A per-second figure and where it came from."""

    value: float
    source: str


def histogram_mean(before: Histogram | None, after: Histogram | None) -> float | None:
    """Mean of the observations made between two scrapes of a histogram."""
    if before is None or after is None:
        return None
    count = counter_delta(before.count, after.count)
    total = counter_delta(before.sum, after.sum)
    if count is None or total is None or count.value <= 0:
        return None
    return total.value / count.value


class MetricsWindow:
    """The scrapes of the last `span` seconds (plus one before, as the window's start)."""

    def __init__(self, span: float = WINDOW_S) -> None:
        self.span = span
        self._scrapes: deque[tuple[float, ServerMetrics]] = deque()

    def add(self, t: float, metrics: ServerMetrics) -> bool:
        """Append a scrape taken at monotonic time `t`; True when a counter went down."""
        reset = bool(self._scrapes) and any_reset(self._scrapes[-1][1], metrics)
        if reset:
            self._scrapes.clear()  # figures across a restart mean nothing
        self._scrapes.append((t, metrics))
        while len(self._scrapes) > 2 and self._scrapes[1][0] <= t - self.span:
            self._scrapes.popleft()
        return reset

    @property
    def latest(self) -> ServerMetrics | None:
        """The newest scrape."""
        return self._scrapes[-1][1] if self._scrapes else None

    def _pair(
        self, span: float, has: Callable[[ServerMetrics], object]
    ) -> tuple[float, ServerMetrics, float, ServerMetrics] | None:
        """The first and last scrapes of about the last `span` seconds that carry a figure.

        SGLang creates a labelled family at its first observation, so a family that appears
        inside the window started there: the window starts at its first appearance.
        """
        # Found by bisection on the scrapes' times, not by a walk: a window holds `span` over
        # the interval scrapes (60 at the default 1 s, 600 at 0.1 s, thousands in the
        # accelerated soaks), and this runs about ten times a tick.
        scrapes = self._scrapes
        last = len(scrapes) - 1
        while last >= 0 and has(scrapes[last][1]) is None:
            last -= 1
        if last < 1:
            return None
        t1, newest = scrapes[last]
        # The newest carrying one from before the span, else the oldest carrying one within it.
        before = bisect_left(scrapes, t1 - span, hi=last, key=_time) - 1
        start = next((i for i in range(before, -1, -1) if has(scrapes[i][1]) is not None), None)
        if start is None:
            start = next(
                (i for i in range(before + 1, last) if has(scrapes[i][1]) is not None), None
            )
        if start is None:
            return None
        t0, first = scrapes[start]
        return (t0, first, t1, newest) if t1 > t0 else None

    def counter_rate(
        self, get: Callable[[ServerMetrics], float | None], span: float
    ) -> float | None:
        """Rate of one counter over about the last `span` seconds."""
        pair = self._pair(span, get)
        if pair is None:
            return None
        t0, first, t1, last = pair
        delta = counter_delta(get(first), get(last))
        return None if delta is None else delta.value / (t1 - t0)

    def decode_tok_s(self, span: float) -> Rate | None:
        """Server-side decode tok/s, best source first (docs/metrics.md)."""
        realtime = self.counter_rate(lambda m: m.realtime_decode_tokens_total, span)
        if realtime is not None:
            return Rate(realtime, "realtime_tokens_total")
        latest = self.latest
        if latest is not None and latest.gen_throughput is not None:
            return Rate(latest.gen_throughput, "gen_throughput gauge")
        generated = self.counter_rate(lambda m: m.generation_tokens_total, span)
        return None if generated is None else Rate(generated, "generation_tokens_total")

    def generating(self, span: float) -> bool | None:
        """Whether the server produced any token over about the last `span` seconds.

        None when no token counter is served (a gauge cannot tell: SGLang's are refreshed only
        while it decodes, so an idle server keeps its last reading).
        """
        for get in (_realtime_tokens, _generation_tokens):
            rate = self.counter_rate(get, span)
            if rate is not None:
                return rate > 0
        return None

    def accept_length(self, span: float) -> WindowAccept | None:
        """Server-side accept length over about the last `span` seconds."""
        pair = self._pair(span, _accept_counter)
        if pair is None:
            latest = self.latest
            if latest is not None and latest.spec_accept_length:
                return WindowAccept(latest.spec_accept_length, "gauge")
            return None
        return server_accept_length(pair[1], pair[3])

    def latency_means(self, span: float) -> tuple[float | None, float | None]:
        """Mean TTFT and ITL (seconds) of requests observed over about the last `span` seconds."""
        return self._histogram_mean(span, _ttft), self._histogram_mean(span, _itl)

    def _histogram_mean(
        self, span: float, get: Callable[[ServerMetrics], Histogram | None]
    ) -> float | None:
        pair = self._pair(span, get)
        return histogram_mean(get(pair[1]), get(pair[3])) if pair else None


def _time(scrape: tuple[float, ServerMetrics]) -> float:
    return scrape[0]


def _accept_counter(m: ServerMetrics) -> float | None:
    """The counter a window's accept length rests on: vLLM/llama.cpp drafts, SGLang verifies."""
    return m.spec_drafts_total if m.spec_drafts_total is not None else m.spec_verify_calls_total


def _realtime_tokens(m: ServerMetrics) -> float | None:
    return m.realtime_decode_tokens_total


def _generation_tokens(m: ServerMetrics) -> float | None:
    return m.generation_tokens_total


def _ttft(m: ServerMetrics) -> Histogram | None:
    return m.ttft_seconds


def _itl(m: ServerMetrics) -> Histogram | None:
    return m.itl_seconds
