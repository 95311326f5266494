"""`ab`'s benches in the store: saved with their A/B, round, side and configuration, read back
as the newest A/B of a server's configuration, and stores written before they were kept."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from specmon.analysis.ab_runs import AbRun, Side, judged, of_configuration
from specmon.analysis.validity import fingerprint
from specmon.model import SpecConfig
from specmon.storage.serialize import snapshot_to_record
from specmon.storage.store import MIGRATIONS, SCHEMA_VERSION, Store
from tests.storage.test_store import ARGS, PROTOCOL, T0, make_snapshot

MAX_AGE_S = 1800.0


def ab(at: float, *, args: dict[str, object] = ARGS, rounds: int = 2) -> list[AbRun]:
    """An A/B as `run_ab` returns it: each round the baseline at 1 and 4 streams, then the
    speculative server at both."""
    runs, spec_args = [], {**args, "speculative_algorithm": "EAGLE3"}
    for round_ in range(1, rounds + 1):
        for side in Side:
            for concurrency in (1, 4):
                at += 60.0
                snapshot = make_snapshot(
                    spec=side == Side.SPECULATIVE,
                    at=at,
                    args=spec_args if side == Side.SPECULATIVE else args,
                    protocol=dataclasses.replace(PROTOCOL, concurrency=concurrency),
                )
                runs.append(AbRun(round_, side, snapshot))
    return runs


def test_an_ab_reads_back_as_it_ran(tmp_path: Path) -> None:
    runs = ab(T0)
    with Store(tmp_path / "db") as store:
        ids = store.save_ab(runs)
        back = store.latest_ab(fingerprint(ARGS))
    assert [(r.round, r.side, r.config, r.snapshot.id) for r in back] == [
        (r.round, r.side, r.config, i) for r, i in zip(runs, ids, strict=True)
    ]
    saved = [
        dataclasses.replace(r, snapshot=dataclasses.replace(r.snapshot, id=i))
        for r, i in zip(runs, ids, strict=True)
    ]
    assert judged(back, max_age_s=MAX_AGE_S) == judged(saved, max_age_s=MAX_AGE_S)
    ((_, found, _),) = judged(back, max_age_s=MAX_AGE_S)
    assert [lv.concurrency for lv in found] == [1, 4]


def test_the_newest_ab_of_the_configuration_is_found(tmp_path: Path) -> None:
    other = {**ARGS, "mem_fraction_static": 0.7}
    with Store(tmp_path / "db") as store:
        store.save_ab(ab(T0))
        newest = store.save_ab(ab(T0 + 3600, rounds=1))
        store.save_ab(ab(T0 + 7200, args=other))  # another configuration, later
        store.save(make_snapshot(at=T0 + 9000))  # a lone bench: no A/B
        assert [r.snapshot.id for r in store.latest_ab(fingerprint(ARGS))] == newest
        assert store.latest_ab(fingerprint({**ARGS, "tp_size": 4})) == []


def test_a_sweep_reads_back_as_the_configuration_the_server_runs(tmp_path: Path) -> None:
    runs = ab(T0)
    k4 = SpecConfig("EAGLE3", 4, 1, 5)
    sweep = runs + [
        AbRun(
            r.round,
            r.side,
            dataclasses.replace(
                r.snapshot, server=dataclasses.replace(r.snapshot.server, speculative=k4)
            ),
            "k=4",
        )
        for r in runs
        if r.side == Side.SPECULATIVE
    ]
    with Store(tmp_path / "db") as store:
        store.save_ab(sweep)
        back = store.latest_ab(fingerprint(ARGS))
    assert [c for c, _, _ in judged(of_configuration(back, k4), max_age_s=MAX_AGE_S)] == ["k=4"]
    assert judged(of_configuration(back, SpecConfig("NGRAM", 3, 1, 4)), max_age_s=MAX_AGE_S) == []


def test_an_ab_is_saved_all_or_none(tmp_path: Path) -> None:
    runs = ab(T0)
    empty = dataclasses.replace(runs[-1].snapshot, runs=())
    with Store(tmp_path / "db") as store:
        with pytest.raises(ValueError, match="at least one run"):
            store.save_ab([*runs[:-1], dataclasses.replace(runs[-1], snapshot=empty)])
        assert store.list() == []
        assert store.latest_ab(fingerprint(ARGS)) == []


def test_a_store_from_before_ab_benches_opens_and_keeps_its_snapshots(tmp_path: Path) -> None:
    """A file at schema 2 (no `ab_benches`): migrated on open, its snapshots kept; its A/Bs,
    saved without their rounds, give no crossover."""
    path = tmp_path / "old.db"
    old = [r.snapshot for r in ab(T0)]
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        for step in MIGRATIONS[:2]:
            for statement in step:
                db.execute(statement)
        db.execute("PRAGMA user_version = 2")
        db.executemany(  # as `ab` saved them then
            "INSERT INTO snapshots (created_at, url, label, backend, model, version, speculative,"
            " fingerprint, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    s.created_at,
                    s.url,
                    s.label,
                    s.server.backend,
                    s.server.model,
                    s.server.version,
                    int(s.server.speculative is not None),
                    fingerprint(s.server.args),
                    json.dumps(snapshot_to_record(s)),
                )
                for s in old
            ],
        )
    with Store(path) as store:
        assert [s.created_at for s in store.list()] == sorted(
            (s.created_at for s in old), reverse=True
        )
        assert store.latest_ab(fingerprint(ARGS)) == []
        store.save_ab(ab(T0 + 3600))
        assert len(store.latest_ab(fingerprint(ARGS))) == 8
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
