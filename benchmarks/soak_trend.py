"""Whether a soak's memory series is flat: judged on its floor, not on its peaks.

A dashboard's memory is a sawtooth: caches fill and are released, the history's deques turn
over, a collection frees a generation at a time (the CI soak's tracked objects swing 42,000 to
59,000 with a period of about 100 s). A line fitted through every sample of a ten-minute run
follows wherever the run happened to end: a run that ended near a peak "grew" +62,081 ± 21,162
tracked objects an hour in CI, beside other work, and failed without a leak. A leak raises what
the sawtooth comes back down to, so the judge compares floors: the span after the settling time
cut in two halves, each longer than two teeth, and each half's floor the mean of its lowest
quarter of samples. The growth of the floor from the first half to the second, scaled to the
whole span, must be at most `within` of the series' mean.

Samples are taken after a forced collection, RSS with freed heap pages handed back
(`soak.live_memory`), so the floor is what is alive, not what the allocator keeps: read so, the
CI soak's RSS stays within ±1.5 MiB of 99 MiB over its last seven minutes.

Both directions are tested (tests/test_soak_trend.py) on synthetic sawtooths and on real runs
of benchmarks/soak.py with and without a planted leak (`--leak-mib-per-min`), whose series are
kept in benchmarks/results/ (docs/performance.md, "The CI soak's judge").
"""

from __future__ import annotations

from collections.abc import Sequence

LOWEST = 0.25
"""The share of each half's samples whose mean is its floor: a trough of every tooth in it, and
more than one sample, so that one low reading does not make the floor."""
MIN_SAMPLES = 12
"""Fewer samples after the settling time than this are not judged."""


def _floor(half: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """A half's mean time and the mean of its lowest `LOWEST` of values."""
    values = sorted(v for _, v in half)
    lowest = values[: max(1, int(len(values) * LOWEST))]
    return sum(t for t, _ in half) / len(half), sum(lowest) / len(lowest)


def trend(
    samples: Sequence[tuple[float, float]], settle_s: float, within: float
) -> dict[str, object]:
    """The floor's growth after `settle_s` (per hour, and over the span as a share of the mean),
    the line through every sample beside it for reference, and whether the series is flat: its
    floor grows by at most `within` of the mean over the span. `flat` is None with fewer than
    `MIN_SAMPLES` samples to judge."""
    points = [(t, v) for t, v in samples if t >= settle_s]
    n = len(points)
    if n < MIN_SAMPLES:
        return {"samples": n, "flat": None}
    (t1, floor1), (t2, floor2) = _floor(points[: n // 2]), _floor(points[n - n // 2 :])
    per_s = (floor2 - floor1) / (t2 - t1)
    span = points[-1][0] - points[0][0]
    mean = sum(v for _, v in points) / n
    return {
        "samples": n,
        "span_s": round(span),
        "mean": round(mean, 1),
        "floors": [round(floor1, 1), round(floor2, 1)],
        "floor_per_h": round(per_s * 3600, 1),
        "floor_growth_over_span_pct": round(100 * per_s * span / mean, 2),
        "slope_per_h": round(_slope(points) * 3600, 1),
        "flat": per_s * span <= within * mean,
    }


def _slope(points: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope through every point (for reference: not judged)."""
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    sxx = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / sxx if sxx else 0.0
