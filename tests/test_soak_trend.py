"""The soak's judge of flat memory (benchmarks/soak_trend.py), both ways: a sawtooth is flat
wherever the run ends, and the same with a planted leak of 1 MiB a minute is not; so are real
CI-length runs of benchmarks/soak.py with and without a planted leak (their series are kept in
benchmarks/results/soak-judge-*.json; docs/performance.md, "The CI soak's judge")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from soak_trend import trend  # noqa: E402

RSS_WITHIN = 0.025  # soak.RSS_FLAT_WITHIN (soak.py imports the dashboard: not imported here)
OBJECTS_WITHIN = 0.25  # soak.OBJECTS_FLAT_WITHIN
SETTLE_S = 180.0
CI_RUN_S = 600.0
EVERY_S = 10.0
MIB_A_MINUTE = 1 / 60  # MiB a second
OBJECTS_A_MINUTE = 2**20 / 88 / 60  # small lists (56 bytes) with their int (28): objects a second


def sawtooth(
    mean: float, amplitude: float, period_s: float, end_phase: float
) -> list[tuple[float, float]]:
    """A CI soak's samples (every 10 s for ten minutes) of a series that fills and is released
    every `period_s`, shifted so that the run ends `end_phase` of the way up a tooth."""
    shift = end_phase * period_s - CI_RUN_S % period_s
    return [
        (t, mean - amplitude / 2 + amplitude * (((t + shift) % period_s) / period_s))
        for t in (i * EVERY_S for i in range(int(CI_RUN_S / EVERY_S) + 1))
    ]


def leaking(samples: list[tuple[float, float]], per_s: float) -> list[tuple[float, float]]:
    return [(t, v + per_s * t) for t, v in samples]


@pytest.mark.parametrize("period_s", [40.0, 60.0, 100.0, 140.0, 200.0])
@pytest.mark.parametrize("end_phase", [0.05, 0.5, 0.95])
def test_a_sawtooth_is_flat_wherever_the_run_ends_and_a_leak_beneath_it_is_not(
    period_s: float, end_phase: float
) -> None:
    # the CI soak's shape: tracked objects swinging a third of their mean, RSS a few MiB
    objects = sawtooth(50_000.0, 17_000.0, period_s, end_phase)
    assert trend(objects, SETTLE_S, OBJECTS_WITHIN)["flat"] is True
    assert trend(leaking(objects, OBJECTS_A_MINUTE), SETTLE_S, OBJECTS_WITHIN)["flat"] is False
    rss = sawtooth(100.0, 3.0, period_s, end_phase)
    assert trend(rss, SETTLE_S, RSS_WITHIN)["flat"] is True
    assert trend(leaking(rss, MIB_A_MINUTE), SETTLE_S, RSS_WITHIN)["flat"] is False


def test_the_floor_is_the_mean_of_each_halfs_lowest_quarter() -> None:
    first = [(200.0 + 10 * i, v) for i, v in enumerate([5, 1, 9, 3, 9, 9, 9, 9])]
    second = [(280.0 + 10 * i, v) for i, v in enumerate([9, 4, 9, 9, 2, 9, 9, 9])]
    result = trend([*first, *second], SETTLE_S, RSS_WITHIN)
    assert result["floors"] == [2.0, 3.0]
    assert result["floor_per_h"] == pytest.approx(3600 / 80, abs=0.1)


def test_too_few_samples_are_not_judged() -> None:
    assert trend([(200.0 + t, 1.0) for t in range(11)], SETTLE_S, RSS_WITHIN)["flat"] is None


def _series(name: str) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    result = json.loads((BENCHMARKS / "results" / f"soak-judge-2026-12-05-{name}.json").read_text())
    rss = [(t, r) for t, r, _ in result["rss_mib_over_time"]]
    objects = [(t, float(n)) for t, n in result["objects_over_time"]]
    return rss, objects


@pytest.mark.parametrize("name", ["none-1", "none-2"])
def test_real_runs_without_a_leak_on_a_loaded_machine_are_flat(name: str) -> None:
    rss, objects = _series(name)
    assert trend(rss, SETTLE_S, RSS_WITHIN)["flat"] is True
    assert trend(objects, SETTLE_S, OBJECTS_WITHIN)["flat"] is True


def test_a_real_run_leaking_1_mib_a_minute_of_bytes_fails_on_rss() -> None:
    rss, _ = _series("bytes-1")
    assert trend(rss, SETTLE_S, RSS_WITHIN)["flat"] is False


def test_a_real_run_leaking_1_mib_a_minute_of_objects_fails_on_both() -> None:
    rss, objects = _series("objects-2")
    assert trend(rss, SETTLE_S, RSS_WITHIN)["flat"] is False
    assert trend(objects, SETTLE_S, OBJECTS_WITHIN)["flat"] is False
