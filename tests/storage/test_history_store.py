"""The lasting history in the store: migration of older stores, round trips, bucketing past an
hour, the age limit and the size cap."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from specmon.analysis.drift import drifts
from specmon.history import Figure, Mark, MarkKind, Point
from specmon.storage import history_store
from specmon.storage import store as store_module
from specmon.storage.history_store import BUCKET_S, RAW_S, Limits
from specmon.storage.store import MIGRATIONS, Store
from tests.storage.test_store import make_snapshot

URL = "http://10.1.230.174:8000"
T0 = 1_750_000_020.0  # a multiple of 60: minute buckets start on it


def test_a_store_of_schema_1_opens_keeps_its_snapshots_and_gains_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    with monkeypatch.context() as old:  # the specmon before the history
        old.setattr(store_module, "MIGRATIONS", MIGRATIONS[:1])
        old.setattr(store_module, "SCHEMA_VERSION", 1)
        with Store(path) as store:
            saved = store.save(make_snapshot())
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
    with Store(path) as store:
        assert store.get(saved).id == saved
        history_store.append(store, [Point(URL, None, T0, Figure.DECODE, 75.9)])
        assert [r.value for r in history_store.readings(store, URL, Figure.DECODE, 0, 2 * T0)] == [
            75.9
        ]


def test_readings_and_marks_round_trip_oldest_first(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        restart = Mark(URL, T0 + 1, MarkKind.RESTART, "server restarted: its counters went down")
        points = [
            Point(URL, 5.0, T0 + 2, Figure.ACCEPT, 2.1),
            Point(URL, 5.0, T0 + 1, Figure.ACCEPT, 2.3),
            Point(URL, 5.0, T0, Figure.DECODE, 70.0),
            Point("http://other", None, T0, Figure.ACCEPT, 9),
        ]
        history_store.append(store, points, [restart])
        got = history_store.readings(store, URL, Figure.ACCEPT, T0, T0 + 10)
        assert [(r.at, r.value, r.span, r.count, r.lifetime) for r in got] == [
            (T0 + 1, 2.3, 0, 1, 5.0),
            (T0 + 2, 2.1, 0, 1, 5.0),
        ]
        assert history_store.marks(store, URL, T0, T0 + 10) == [restart]
        assert history_store.first_at(store, URL) == T0
        assert history_store.targets(store) == [URL, "http://other"]


def test_readings_past_an_hour_become_minute_buckets_younger_ones_stay(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        values = [60.0, 70.0, 80.0, 90.0]  # four readings in the first minute, 15 s apart
        history_store.append(
            store, [Point(URL, None, T0 + 15 * i, Figure.DECODE, v) for i, v in enumerate(values)]
        )
        young = T0 + 2 * RAW_S
        history_store.append(store, [Point(URL, None, young, Figure.DECODE, 50.0)])
        history_store.maintain(store, young + 1, Limits())
        got = history_store.readings(store, URL, Figure.DECODE, 0, 2 * T0)
        assert [(r.at, r.span, r.value, r.low, r.high, r.count) for r in got] == [
            (T0, BUCKET_S, 75.0, 60.0, 90.0, 4),
            (young, 0, 50.0, 50.0, 50.0, 1),
        ]
        history_store.maintain(store, young + 2, Limits())  # a bucket is made once
        assert len(history_store.readings(store, URL, Figure.DECODE, 0, 2 * T0)) == 2


def test_a_minute_is_bucketed_whole_even_when_the_hour_ends_inside_it(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        history_store.append(store, [Point(URL, None, T0 + s, Figure.DECODE, s) for s in (10, 50)])
        # The hour ends between the two readings: neither goes until the minute is past.
        history_store.maintain(store, T0 + 30 + RAW_S, Limits())
        assert [r.span for r in history_store.readings(store, URL, Figure.DECODE, 0, 2 * T0)] == [
            0,
            0,
        ]
        history_store.maintain(store, T0 + 60 + RAW_S, Limits())
        got = history_store.readings(store, URL, Figure.DECODE, 0, 2 * T0)
        assert [(r.value, r.count) for r in got] == [(30.0, 2)]


def test_history_past_the_age_limit_goes_with_its_marks(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        history_store.append(
            store,
            [Point(URL, None, T0 + s, Figure.DECODE, v) for s, v in ((0, 1), (86400, 2))],
            [Mark(URL, T0, MarkKind.WATCH, "specmon started")],
        )
        history_store.maintain(store, T0 + 86400 + 10, Limits(max_age_s=3600))
        assert [r.value for r in history_store.readings(store, URL, Figure.DECODE, 0, 2 * T0)] == [
            2
        ]
        assert history_store.marks(store, URL, 0, 2 * T0) == []


def test_over_the_size_cap_the_oldest_readings_go_until_it_fits(tmp_path: Path) -> None:
    cap = 400_000
    with Store(tmp_path / "db") as store:
        store.save(make_snapshot())
        points = [Point(URL, None, T0 + i, Figure.DECODE, float(i)) for i in range(20_000)]
        history_store.append(store, points)
        assert history_store.used_bytes(store) > cap
        history_store.maintain(store, T0 + 20_000, Limits(max_bytes=cap))
        assert history_store.used_bytes(store) <= cap
        kept = history_store.readings(store, URL, Figure.DECODE, 0, 2 * T0)
        assert kept and kept[-1].value == 19_999  # the newest stay
        assert len(store.list()) == 1  # snapshots are never pruned


def test_columns_average_each_share_of_the_range(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        history_store.append(
            store,
            [Point(URL, None, T0 + s, Figure.DECODE, v) for s, v in ((0, 10), (10, 20), (70, 40))],
        )
        assert history_store.columns(store, URL, Figure.DECODE, T0, T0 + 120, 4) == [
            15.0,
            None,
            40.0,
            None,
        ]


def test_drift_judged_on_minutes_is_drift_judged_on_readings(tmp_path: Path) -> None:
    """Three hours of 1 s readings whose accept length slips 2.20 -> 2.05 midway, with a noise
    of its own, and a restart mark before them: the minutes the store sums give the drift the
    readings give, from 1/60 of the rows."""
    noise = [0.03 * ((i * 7919) % 13 - 6) / 6 for i in range(3 * 3600)]
    points = [
        Point(URL, 5.0, T0 + i, Figure.ACCEPT, (2.20 if i < 5400 else 2.05) + noise[i])
        for i in range(3 * 3600)
    ]
    restart = Mark(URL, T0 - 30, MarkKind.RESTART, "server restarted")
    with Store(tmp_path / "db") as store:
        history_store.append(store, points, [restart])
        end = T0 + 4 * 3600
        marks = history_store.marks(store, URL, 0, end)
        raw = history_store.readings(store, URL, Figure.ACCEPT, 0, end)
        minutes = history_store.minute_readings(store, URL, Figure.ACCEPT, 0, end)
    assert len(raw) == 10_800 and len(minutes) == 180
    assert sum(m.count for m in minutes) == len(raw)
    (by_reading,) = drifts({Figure.ACCEPT: raw}, marks)
    (by_minute,) = drifts({Figure.ACCEPT: minutes}, marks)
    assert by_minute.before == pytest.approx(by_reading.before, rel=1e-12)
    assert by_minute.after == pytest.approx(by_reading.after, rel=1e-12)
    assert by_minute.z == pytest.approx(by_reading.z, rel=1e-9)
    assert by_reading.change == pytest.approx(2.05 / 2.20 - 1, abs=0.002)
