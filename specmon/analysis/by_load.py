"""The server's own figures by load: each interval between two scrapes in the band of its running
requests (the server's `num_running_reqs` / `num_requests_running` gauge), so a server that
tunes its speculation by batch size shows what it drafts, accepts and decodes at each load
(docs/metrics.md, "By load").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from specmon.analysis.drafting import DraftSteps, draft_steps, drafting
from specmon.analysis.load import Level
from specmon.analysis.rates import counter_delta
from specmon.model import ServerMetrics

BAND_STARTS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""Running requests where a band starts: 1, 2-3, 4-7 … (powers of two, as batch-size buckets
and CUDA-graph sizes grow)."""


def band_of(running: float) -> int | None:
    """The start of the band `running` requests fall in; None when idle (below 1)."""
    n = round(running)
    if n < 1:
        return None
    return max(start for start in BAND_STARTS if start <= n)


def band_end(start: int) -> int | None:
    """The band's last running-request count; None for the last band (no end)."""
    later = [s for s in BAND_STARTS if s > start]
    return later[0] - 1 if later else None


def band_label(start: int) -> str:
    """ "1", "2-3", "256+"."""
    end = band_end(start)
    if end is None:
        return f"{start}+"
    return str(start) if end == start else f"{start}-{end}"


def levels_in_band(levels: Iterable[Level], start: int) -> tuple[Level, ...]:
    """The A/B levels (`analysis.load.level`) whose streams fall in the band starting at
    `start`: an A/B at N streams keeps N requests running, as the band counts them."""
    return tuple(lv for lv in levels if band_of(lv.concurrency) == start)


@dataclass(frozen=True, slots=True)
class LoadInterval:
    """One interval between two scrapes: its load and what the server did in it."""

    running: float
    """Running requests: the mean of the gauge at both ends."""
    seconds: float
    decode_tokens: float | None
    """Tokens decoded (SGLang `realtime_tokens_total{mode="decode"}`, else generation tokens)."""
    drafted: DraftSteps | None
    accept_tokens: float
    """Tokens of the drafting steps, bonus included (the accept length's numerator)."""
    accept_steps: float
    """The drafting steps they came from (its denominator)."""
    transition: bool = False
    """It spans a change of the server's setting (`session.drafting`): half one setting and
    half the other, at a load between two bands; left out of every band."""

    @property
    def idle(self) -> bool:
        """Nothing ran in it: under one running request, or no token decoded whatever the gauge
        says (SGLang's `num_running_reqs` keeps its last value while idle, for up to 30 s)."""
        return band_of(self.running) is None or self.decode_tokens == 0


def load_interval(
    before: ServerMetrics, after: ServerMetrics, seconds: float
) -> LoadInterval | None:
    """One interval's load and figures; None without a running gauge or time in between."""
    if before.num_running_reqs is None or after.num_running_reqs is None or seconds <= 0:
        return None
    tokens = counter_delta(
        before.realtime_decode_tokens_total, after.realtime_decode_tokens_total
    ) or counter_delta(before.generation_tokens_total, after.generation_tokens_total)
    steps = draft_steps(before, after)
    accept_tokens = accept_steps = 0.0
    accepted = counter_delta(before.spec_accepted_tokens_total, after.spec_accepted_tokens_total)
    if steps is not None and steps.source == "counters" and accepted is not None:
        accept_tokens, accept_steps = accepted.value + steps.drafted, steps.drafted
    elif steps is not None and steps.drafted and after.spec_accept_length:
        # SGLang's accept-length gauge: its last 40 batches, taken for the interval's.
        accept_tokens, accept_steps = after.spec_accept_length * steps.drafted, steps.drafted
    return LoadInterval(
        running=(before.num_running_reqs + after.num_running_reqs) / 2,
        seconds=seconds,
        decode_tokens=tokens.value if tokens is not None else None,
        drafted=steps,
        accept_tokens=accept_tokens,
        accept_steps=accept_steps,
    )


@dataclass(frozen=True, slots=True)
class LoadBand:
    """The server's figures over the intervals of one band of load."""

    start: int
    """The band's first running-request count (`band_label`)."""
    seconds: float
    """Time the server spent at this load (over the history kept)."""
    draft_length: float | None
    duty_cycle: float | None
    off: bool | None
    """Speculation off at this load (`Drafting.off`); None without drafting figures."""
    accept_length: float | None
    """Tokens per drafting step, bonus included."""
    tok_s: float | None
    """The server's decode throughput at this load, all requests."""
    per_request_tok_s: float | None
    """`tok_s` over the mean running requests: one stream's decode rate."""


def by_load(intervals: Iterable[LoadInterval]) -> tuple[LoadBand, ...]:
    """The bands the intervals fall in, lightest load first (idle intervals and those spanning a
    change of setting left out)."""
    groups: dict[int, list[LoadInterval]] = defaultdict(list)
    for interval in intervals:
        start = band_of(interval.running)
        if start is not None and not interval.idle and not interval.transition:
            groups[start].append(interval)
    return tuple(_band(start, groups[start]) for start in sorted(groups))


def _band(start: int, parts: list[LoadInterval]) -> LoadBand:
    seconds = sum(p.seconds for p in parts)
    figures = drafting(p.drafted for p in parts if p.drafted is not None)
    counted = [p for p in parts if p.decode_tokens is not None]
    timed = sum(p.seconds for p in counted)
    tok_s = sum(p.decode_tokens or 0.0 for p in counted) / timed if timed > 0 else None
    running = sum(p.running * p.seconds for p in parts) / seconds
    steps = sum(p.accept_steps for p in parts)
    return LoadBand(
        start=start,
        seconds=seconds,
        draft_length=figures.draft_length if figures else None,
        duty_cycle=figures.duty_cycle if figures else None,
        off=figures.off if figures else None,
        accept_length=sum(p.accept_tokens for p in parts) / steps if steps > 0 else None,
        tok_s=tok_s,
        per_request_tok_s=tok_s / running if tok_s is not None and running > 0 else None,
    )
