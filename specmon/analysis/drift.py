"""Drift: a figure that moved beyond its noise over hours, with no restart or config change.

The lifetime's first hour is compared with its last: each cut into minutes, the minutes' means
give each hour's mean and standard error, and a change counts when it is `DRIFT_Z` standard
errors from zero and at least `MIN_CHANGE` of the first hour's mean (a real but negligible move
is not worth a finding). Minutes, not readings: readings a second apart share their noise (a
rate over 10 s), minutes do not.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specmon.history import Figure, Mark, MarkKind, Reading

WINDOW_S = 3600.0
"""The first and the last hour are compared."""
MIN_SPAN_S = 2 * 3600.0
"""A lifetime shorter than this has no drift to judge."""
MINUTE_S = 60.0
MIN_MINUTES = 10
"""Each hour needs this many minutes with readings."""
DRIFT_Z = 4.0
MIN_CHANGE = 0.03
JUDGED = (Figure.ACCEPT, Figure.SERVER_ACCEPT, Figure.PROBE_DECODE)
"""Acceptance and the probe's decode speed: the server's output rate follows its load."""
LABELS = {
    Figure.ACCEPT: "accept length (probe)",
    Figure.SERVER_ACCEPT: "accept length (server)",
    Figure.PROBE_DECODE: "decode tok/s (probe)",
    Figure.DECODE: "server tok/s",
    Figure.CYCLE: "cycle ms (probe)",
}


@dataclass(frozen=True, slots=True)
class Drift:
    """A figure's move from its lifetime's first hour to its last.

    Attributes:
        figure: Which figure.
        before: The first hour's mean.
        after: The last hour's mean.
        z: The change in standard errors.
        since: Start of the first hour (unix seconds).
        until: End of the last hour.
    """

    figure: Figure
    before: float
    after: float
    z: float
    since: float
    until: float

    @property
    def change(self) -> float:
        """The relative change (−0.08: 8% lower)."""
        return self.after / self.before - 1

    def text(self) -> str:
        """One line for the events log and `specmon history`."""
        hours = (self.until - self.since) / 3600
        return (
            f"drift: {LABELS[self.figure]} {self.before:.3g} → {self.after:.3g}"
            f" ({self.change:+.1%}) over {hours:.1f} h with no restart or config change"
        )


def minute_means(readings: Sequence[Reading]) -> dict[int, float]:
    """Each minute's mean of the readings in it (buckets weigh by their count)."""
    totals: dict[int, tuple[float, int]] = {}
    for r in readings:
        minute = int(r.at // MINUTE_S)
        total, count = totals.get(minute, (0.0, 0))
        totals[minute] = (total + r.value * r.count, count + r.count)
    return {m: total / count for m, (total, count) in totals.items() if count}


def drift(figure: Figure, readings: Sequence[Reading]) -> Drift | None:
    """The figure's drift over `readings` (one lifetime, oldest first), or None: too short a
    span, too few minutes, or a move within the noise."""
    if not readings:
        return None
    start, end = readings[0].at, readings[-1].at + readings[-1].span  # a bucket's end
    if end - start < MIN_SPAN_S:
        return None
    minutes = minute_means(readings)
    first = [v for m, v in minutes.items() if m * MINUTE_S < start + WINDOW_S]
    last = [v for m, v in minutes.items() if m * MINUTE_S >= end - WINDOW_S]
    if min(len(first), len(last)) < MIN_MINUTES:
        return None
    before, after = statistics.fmean(first), statistics.fmean(last)
    error = math.sqrt(
        statistics.variance(first) / len(first) + statistics.variance(last) / len(last)
    )
    if before == 0:
        return None
    z = abs(after - before) / error if error else math.inf
    if z < DRIFT_Z or abs(after / before - 1) < MIN_CHANGE:
        return None
    return Drift(figure, before, after, z, start, end)


def since_last_change(readings: Sequence[Reading], marks: Sequence[Mark]) -> list[Reading]:
    """The readings after the last restart, config change or drafting switch: among `marks`, or
    a change of lifetime between readings (a restart while nothing watched)."""
    # A drafting switch changes what acceptance means (another draft length): a change too.
    changes = [m.at for m in marks if m.kind != MarkKind.WATCH]
    after = max(changes, default=-math.inf)
    current = readings[-1].lifetime if readings else None
    if current is not None:
        other = [r.at for r in readings if r.lifetime is not None and r.lifetime != current]
        after = max(after, *other) if other else after
    return [r for r in readings if r.at > after]


def drifts(series: Mapping[Figure, Sequence[Reading]], marks: Sequence[Mark]) -> list[Drift]:
    """Every judged figure's drift in the current lifetime (`JUDGED`, in that order)."""
    found = (drift(f, since_last_change(series.get(f, ()), marks)) for f in JUDGED)
    return [d for d in found if d is not None]
