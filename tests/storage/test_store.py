"""The SQLite snapshot store: round trips, queries, migrations, and every way a file can be bad."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import platformdirs
import pytest
from snapshots import big_moe_server

from specmon.analysis.validity import fingerprint
from specmon.errors import SpecmonError
from specmon.model import Protocol, RunFigures, Snapshot, SpecConfig
from specmon.storage.serialize import snapshot_to_record
from specmon.storage.store import (
    SCHEMA_VERSION,
    BadRecord,
    SnapshotNotFound,
    Store,
    StoreCorrupt,
    StoreError,
    StoreLocked,
    StoreMissing,
    StoreTooNew,
    StoreUnavailable,
    default_db_path,
)

URL = "http://10.1.230.174:8000"
T0 = 1_750_000_000.0
# docs/design.md §1: baseline 62.9 tok/s; EAGLE-3 75.9 tok/s, cycle 29.9 ms, accept length 2.1.
ARGS = {"model_path": "org/Big-MoE", "tp_size": 8, "mem_fraction_static": 0.8, "port": 30000}
SPEC_ARGS = {**ARGS, "speculative_algorithm": "EAGLE3", "speculative_num_steps": 2}
PROTOCOL = Protocol(runs=3, warmup=1, max_tokens=500, temperature=0.0, prompt="Explain a CPU.")


def make_snapshot(
    *,
    spec: bool = False,
    at: float = T0,
    url: str = URL,
    label: str | None = None,
    args: dict[str, object] | None = None,
    protocol: Protocol = PROTOCOL,
) -> Snapshot:
    tok_s, accept, cycle = (75.9, 2.1, 29.9) if spec else (62.9, None, None)
    run = RunFigures(
        completion_tokens=500,
        prompt_tokens=21,
        ttft_ms=45.0,
        e2e_s=499 / tok_s + 0.045,
        e2e_tok_s=500 / (499 / tok_s + 0.045),
        decode_tok_s=tok_s,
        accept_length=accept,
        server_accept_length=accept,
        verify_ct=238 if spec else None,
        cycle_ms=cycle,
        cycle_ms_p50=cycle,
        cycle_ms_p95=None if cycle is None else 35.9,
    )
    server = big_moe_server(
        SpecConfig("EAGLE3", 2, 1, 3) if spec else None,
        args if args is not None else (SPEC_ARGS if spec else ARGS),
    )
    return Snapshot(
        created_at=at,
        url=url,
        label=label,
        server=server,
        protocol=protocol,
        runs=(run, dataclasses.replace(run, decode_tok_s=tok_s + 0.1), run),
    )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    # A parent that does not exist yet: the store creates it.
    return tmp_path / "data" / "specmon.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with Store(db_path) as opened:
        yield opened


def raw(path: Path) -> closing[sqlite3.Connection]:
    """A plain sqlite3 connection that is closed on leaving the `with` block."""
    return closing(sqlite3.connect(path, isolation_level=None))


def test_save_then_get_returns_an_equal_snapshot_with_its_id(store: Store) -> None:
    snapshot = make_snapshot(spec=True, label="eagle steps=2")
    snapshot_id = store.save(snapshot)
    assert store.get(snapshot_id) == dataclasses.replace(snapshot, id=snapshot_id)


def test_saved_columns_mirror_the_record(store: Store, db_path: Path) -> None:
    snapshot_id = store.save(make_snapshot(spec=True, label="x"))
    with raw(db_path) as db:
        row = db.execute(
            "SELECT created_at, url, label, backend, model, version, speculative, fingerprint,"
            " record FROM snapshots WHERE id = ?",
            (snapshot_id,),
        ).fetchone()
    assert row[:8] == (T0, URL, "x", "sglang", "org/Big-MoE", "0.5.17", 1, fingerprint(ARGS))
    assert json.loads(row[8]) == snapshot_to_record(make_snapshot(spec=True, label="x"))


def test_snapshot_without_runs_is_refused_and_nothing_is_stored(store: Store) -> None:
    with pytest.raises(ValueError, match="at least one run"):
        store.save(dataclasses.replace(make_snapshot(), runs=()))
    assert store.list() == []


def test_get_unknown_id(store: Store, db_path: Path) -> None:
    with pytest.raises(SnapshotNotFound) as caught:
        store.get(42)
    assert str(caught.value) == f"no snapshot 42 in {db_path}"
    assert isinstance(caught.value, KeyError)
    assert isinstance(caught.value, SpecmonError)


def test_list_is_newest_first_and_filters(store: Store) -> None:
    ids = [
        store.save(make_snapshot(at=T0 + 10, label="b")),
        store.save(make_snapshot(at=T0, label="a")),
        store.save(make_snapshot(at=T0 + 20, label="c", url="http://other:30000")),
    ]
    assert [s.label for s in store.list()] == ["c", "b", "a"]
    assert [s.id for s in store.list()] == [ids[2], ids[0], ids[1]]
    assert [s.label for s in store.list(url=URL)] == ["b", "a"]
    assert [s.label for s in store.list(limit=2)] == ["c", "b"]
    assert store.list(url="http://nowhere:1") == []
    assert store.skipped == []


def test_latest_baseline(store: Store) -> None:
    old = store.save(make_snapshot(at=T0))
    new = store.save(make_snapshot(at=T0 + 100))
    store.save(make_snapshot(spec=True, at=T0 + 200))  # speculative: never a baseline
    other_flags = {**ARGS, "mem_fraction_static": 0.7}
    store.save(make_snapshot(at=T0 + 300, args=other_flags))
    elsewhere = store.save(make_snapshot(at=T0 + 50, url="http://baseline:30000"))
    short = dataclasses.replace(PROTOCOL, max_tokens=128)
    short_id = store.save(make_snapshot(at=T0 + 10, protocol=short))

    key = fingerprint(SPEC_ARGS)  # the speculative server's: speculative_* keys do not count
    found = store.latest_baseline(key)
    assert found is not None
    assert found.id == new
    found = store.latest_baseline(key, protocol=short)
    assert found is not None
    assert found.id == short_id
    # Runs and warm-up do not change what a run measures.
    found = store.latest_baseline(key, protocol=dataclasses.replace(PROTOCOL, runs=10))
    assert found is not None
    assert found.id == new
    found = store.latest_baseline(key, url="http://baseline:30000")
    assert found is not None
    assert found.id == elsewhere
    assert store.latest_baseline(key, protocol=dataclasses.replace(PROTOCOL, prompt="?")) is None
    assert store.latest_baseline("000000000000") is None
    assert old != new


def test_migrates_an_empty_file(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"")
    with Store(db_path) as store:
        store.save(make_snapshot())
    with raw(db_path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert {"snapshots", "snapshots_url_created", "snapshots_fingerprint"} <= names


def test_reading_never_creates_a_store(db_path: Path) -> None:
    """`create=False` (a command that reads): a missing file or folder is named, nothing made."""
    with pytest.raises(StoreMissing) as caught:
        Store(db_path, create=False)
    assert str(caught.value) == f"no snapshot store at {db_path} (no such folder)"
    assert not db_path.parent.exists()
    db_path.parent.mkdir(parents=True)
    with pytest.raises(StoreMissing, match=r"\(no such file\)$"):
        Store(db_path, create=False)
    assert list(db_path.parent.iterdir()) == []
    Store(db_path).close()
    with Store(db_path, create=False) as store:
        assert store.list() == []


def test_reopening_keeps_snapshots(db_path: Path) -> None:
    with Store(db_path) as store:
        snapshot_id = store.save(make_snapshot(label="kept"))
    with Store(db_path) as store:
        assert store.get(snapshot_id).label == "kept"


def test_refuses_a_newer_schema(db_path: Path) -> None:
    Store(db_path).close()
    with raw(db_path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreTooNew, match="written by a newer specmon") as caught:
        Store(db_path)
    assert str(db_path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_refuses_another_programs_database(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with raw(db_path) as db:
        db.execute("CREATE TABLE accounts (id INTEGER)")
    with pytest.raises(StoreCorrupt, match="not a specmon store"):
        Store(db_path)
    with raw(db_path) as db:  # left as it was
        assert db.execute("PRAGMA user_version").fetchone() == (0,)
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("accounts",)]
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_corrupted_file(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"\x89garbage, not SQLite at all\x00" * 200)
    with pytest.raises(StoreCorrupt) as caught:
        Store(db_path)
    assert str(caught.value) == (
        f"{db_path} is not a specmon store (corrupted?): move it away or pass --db"
    )


def test_unwritable_location(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # Root writes through file modes; /proc refuses everyone a new directory.
        path = Path("/proc/specmon-test/specmon.db")
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        path = locked / "sub" / "specmon.db"
    with pytest.raises(StoreUnavailable, match="cannot create"):
        Store(path)


def test_unwritable_directory_without_subdirectory(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write into a read-only directory")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    with pytest.raises(StoreUnavailable, match="cannot open"):
        Store(locked / "specmon.db")


def test_read_only_file_reads_but_refuses_writes(db_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write a read-only file")
    with Store(db_path) as store:
        snapshot_id = store.save(make_snapshot())
    db_path.chmod(0o444)
    with Store(db_path) as store:
        assert [s.id for s in store.list()] == [snapshot_id]
        with pytest.raises(StoreUnavailable, match="is read-only"):
            store.save(make_snapshot())


def test_a_directory_is_not_openable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match=re.escape(f"cannot open {tmp_path}")):
        Store(tmp_path)


def test_uses_wal(store: Store, db_path: Path) -> None:
    with raw(db_path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_two_stores_on_one_file_write_alternately(db_path: Path) -> None:
    with Store(db_path) as first, Store(db_path) as second:
        ids = []
        for i in range(6):
            writer = first if i % 2 == 0 else second
            ids.append(writer.save(make_snapshot(at=T0 + i, label=f"s{i}")))
            # Each sees the other's commits at once.
            reader = second if writer is first else first
            assert reader.get(ids[-1]).label == f"s{i}"
        assert [s.label for s in first.list()] == [f"s{i}" for i in reversed(range(6))]
        assert len(set(ids)) == 6


def test_locked_store_times_out_and_stores_nothing(db_path: Path) -> None:
    Store(db_path).close()
    with raw(db_path) as other, Store(db_path, timeout=0.05) as store:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreLocked, match="is locked by another process"):
            store.save(make_snapshot())
        # Readers are not blocked by a writer under WAL.
        assert store.list() == []
        other.execute("ROLLBACK")
        snapshot_id = store.save(make_snapshot())
        assert [s.id for s in store.list()] == [snapshot_id]


def test_failed_write_rolls_back_and_the_store_stays_usable(store: Store, db_path: Path) -> None:
    with raw(db_path) as db:
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON snapshots"
            " BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
        )
    with pytest.raises(StoreError, match="disk says no"):
        store.save(make_snapshot())
    with raw(db_path) as db:
        db.execute("DROP TRIGGER refuse")
    assert store.list() == []
    assert store.get(store.save(make_snapshot(label="after"))).label == "after"


def test_bad_rows_are_skipped_by_list_and_raised_by_get(store: Store, db_path: Path) -> None:
    good = store.save(make_snapshot(label="good"))
    newer = snapshot_to_record(make_snapshot(at=T0 + 1))
    newer["record_version"] = 99
    with raw(db_path) as db:
        insert = (
            "INSERT INTO snapshots (id, created_at, url, speculative, fingerprint, record)"
            " VALUES (?, ?, ?, 0, ?, ?)"
        )
        db.execute(insert, (50, T0 + 2, URL, fingerprint(ARGS), "{not json"))
        db.execute(insert, (51, T0 + 1, URL, fingerprint(ARGS), json.dumps(newer)))
    assert [s.id for s in store.list()] == [good]
    assert len(store.skipped) == 2
    assert store.skipped[0].startswith(f"snapshot 50 in {db_path} is unreadable: ")
    assert "written by a newer specmon" in store.skipped[1]
    with pytest.raises(BadRecord, match=r"snapshot 51 .* is unreadable: .*newer specmon"):
        store.get(51)
    # latest_baseline passes over bad rows to the newest readable one.
    found = store.latest_baseline(fingerprint(ARGS))
    assert found is not None
    assert found.id == good
    assert len(store.skipped) == 2
    # A clean query resets the list.
    store.list(url="http://nowhere:1")
    assert store.skipped == []


def test_usable_from_another_thread(store: Store) -> None:
    # Textual thread workers use a store opened on the main thread.
    results: list[int] = []
    worker = threading.Thread(target=lambda: results.append(store.save(make_snapshot())))
    worker.start()
    worker.join()
    assert [s.id for s in store.list()] == results


def test_default_db_path() -> None:
    path = default_db_path()
    assert path.name == "specmon.db"
    assert path.parent == platformdirs.user_data_path("specmon", appauthor=False)
