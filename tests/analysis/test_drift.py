"""Drift: reported on a slow decline, never on a flat noisy series, not across a restart."""

from __future__ import annotations

import random

import pytest

from specmon.analysis.drift import MIN_SPAN_S, Drift, drift, drifts, since_last_change
from specmon.history import Figure, Mark, MarkKind, Reading

T0 = 1_750_000_020.0


def series(
    hours: float, start: float, end: float, noise: float, seed: int, every_s: float = 10.0
) -> list[Reading]:
    """A probe's accept length every `every_s` from `start` to `end` over `hours`, with noise."""
    rng = random.Random(seed)
    n = int(hours * 3600 / every_s)
    return [
        Reading(T0 + i * every_s, 0, start + (end - start) * i / n + rng.gauss(0, noise), 0, 0, 1)
        for i in range(n)
    ]


def test_a_slow_decline_over_hours_is_reported() -> None:
    # vLLM #41838: 3.07 → ~2.8 over hours, only a restart resets it.
    found = drift(Figure.ACCEPT, series(6, 3.07, 2.8, noise=0.3, seed=1))
    assert found is not None
    assert found.before == pytest.approx(3.05, abs=0.05)  # the first hour's mean
    assert found.after == pytest.approx(2.82, abs=0.05)
    assert found.change < -0.05
    assert found.text() == (
        f"drift: accept length (probe) {found.before:.3g} → {found.after:.3g}"
        f" ({found.change:+.1%}) over 6.0 h with no restart or config change"
    )


def test_a_decline_of_minute_buckets_is_reported_as_of_raw_readings() -> None:
    raw = series(6, 3.07, 2.8, noise=0.3, seed=2)
    minutes = [raw[i : i + 6] for i in range(0, len(raw), 6)]
    buckets = [
        Reading(
            m[0].at,
            60,
            sum(r.value for r in m) / 6,
            min(r.value for r in m),
            max(r.value for r in m),
            6,
        )
        for m in minutes
    ]
    found = drift(Figure.ACCEPT, buckets)
    assert found is not None and found.change < -0.05


@pytest.mark.parametrize("seed", range(200))
def test_a_flat_noisy_series_is_never_reported(seed: int) -> None:
    assert drift(Figure.ACCEPT, series(8, 2.5, 2.5, noise=0.5, seed=seed)) is None


def test_a_move_within_the_noise_floor_of_3_percent_is_not_a_finding() -> None:
    # Clear to the statistics (no noise at all) but 1% is not worth a page.
    assert drift(Figure.ACCEPT, series(6, 3.0, 2.97, noise=0.0, seed=0)) is None


def test_under_two_hours_nothing_is_judged() -> None:
    short = series(MIN_SPAN_S / 3600 - 0.1, 3.0, 2.0, noise=0.01, seed=0)
    assert drift(Figure.ACCEPT, short) is None


def test_only_the_readings_after_the_last_restart_or_config_change_count() -> None:
    readings = series(6, 3.07, 2.8, noise=0.05, seed=3)
    restart = Mark("u", T0 + 5 * 3600, MarkKind.RESTART, "restarted")
    watch = Mark("u", T0 + 5.5 * 3600, MarkKind.WATCH, "specmon started")
    assert since_last_change(readings, [restart, watch])[0].at > restart.at
    assert drifts({Figure.ACCEPT: readings}, [restart, watch]) == []
    found = drifts({Figure.ACCEPT: readings}, [watch])  # specmon's own restart changes nothing
    assert [d.figure for d in found] == [Figure.ACCEPT] and isinstance(found[0], Drift)


def test_a_drafting_switch_cuts_the_series_as_a_config_change_does() -> None:
    readings = series(6, 3.07, 2.8, noise=0.05, seed=3)
    switch = Mark("u", T0 + 5 * 3600, MarkKind.SWITCH, "drafts 3 tokens → off at 16 running")
    assert drifts({Figure.ACCEPT: readings}, [switch]) == []


def test_a_new_server_lifetime_cuts_the_series_without_a_mark() -> None:
    readings = [
        Reading(r.at, 0, r.value, 0, 0, 1, 100.0 if r.at < T0 + 3 * 3600 else 200.0)
        for r in series(6, 3.07, 2.8, noise=0.05, seed=4)
    ]
    assert since_last_change(readings, [])[0].lifetime == 200.0
    found = drifts({Figure.ACCEPT: readings}, [])
    assert [d.since >= T0 + 3 * 3600 for d in found] == [True]
