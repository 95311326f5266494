"""Nothing finished is lost: a save waits for another process's lock with progress and a way
out, and what the store cannot take is kept in a private file that `import` puts into it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from specmon.analysis.validity import fingerprint
from specmon.cli import main
from specmon.storage import saving
from specmon.storage.saving import save_or_keep
from specmon.storage.serialize import snapshot_to_record
from specmon.storage.store import Store
from specmon.storage.unsaved import (
    FORMAT,
    Unsaved,
    UnsavedError,
    import_unsaved,
    pending,
    read_unsaved,
    unsaved_dir,
)
from tests.storage.test_store import make_snapshot
from tests.storage.test_store_ab import ab


class Lock:
    """Another process's write lock on a store: a second connection, BEGIN EXCLUSIVE, held by a
    thread of its own until `release`."""

    def __init__(self, db: Path) -> None:
        self._db = db
        self._taken = threading.Event()
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        other = sqlite3.connect(self._db, isolation_level=None, check_same_thread=False)
        try:
            other.execute("BEGIN EXCLUSIVE")
            self._taken.set()
            self._release.wait()
            other.execute("ROLLBACK")
        finally:
            other.close()

    def take(self) -> Lock:
        self._thread.start()
        assert self._taken.wait(30)
        return self

    def release(self) -> None:
        self._release.set()

    def join(self) -> None:
        self._release.set()
        self._thread.join(30)


@contextmanager
def locked(db: Path) -> Iterator[Lock]:
    lock = Lock(db).take()
    try:
        yield lock
    finally:
        lock.join()


def ticking(step: float) -> Callable[[], float]:
    """A clock that moves `step` seconds at each reading: the wait is long in its time only."""
    now = [0.0]

    def clock() -> float:
        now[0] += step
        return now[0]

    return clock


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own unsaved folder (the run's is shared)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    Store(path).close()
    return path


async def test_an_ab_whose_store_stays_locked_past_the_wait_is_kept_and_imported(
    db: Path, tmp_path: Path
) -> None:
    """The default wait (10 min, on a clock that moves 7 s a reading) against a lock that never
    goes: the A/B is kept whole in a private file, and `import` stores it as `save_ab` would."""
    runs = ab(1_750_000_000.0)
    said: list[str] = []
    with Store(db) as store, locked(db):
        outcome = await save_or_keep(
            store, Unsaved.of_ab(runs), say=said.append, attempt_s=0.01, clock=ticking(7.0)
        )
        assert store.list() == []
    assert not outcome.saved and not outcome.interrupted
    assert outcome.kept is not None and outcome.kept.parent == unsaved_dir()
    assert outcome.why is not None and "stayed locked by another process for 10" in outcome.why
    assert stat.S_IMODE(outcome.kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(unsaved_dir().stat().st_mode) == 0o700
    # Progress: said at once, then every PROGRESS_EVERY_S of its clock; each names the way out.
    assert 10 < len(said) < 600 / saving.PROGRESS_EVERY_S + 2
    assert all("is locked by another process: waiting to save the A/B's 8 snapshots" in line
               and "Ctrl-C keeps it in a file instead" in line for line in said)  # fmt: skip
    message = outcome.message()
    assert f"kept in {outcome.kept}" in message
    assert f"specmon snapshots import --db {db} {outcome.kept}" in message
    data = json.loads(outcome.kept.read_text())
    assert data["format"] == FORMAT and data["store"] == str(db)
    assert data["snapshots"] == [snapshot_to_record(r.snapshot) for r in runs]  # the store's form

    with Store(db) as store:
        ids = import_unsaved(store, outcome.kept)
        assert ids is not None and len(ids) == len(runs)
        back = store.latest_ab(fingerprint(runs[0].snapshot.server.args))
        assert [(r.round, r.side, r.config) for r in back] == [
            (r.round, r.side, r.config) for r in runs
        ]
        assert [snapshot_to_record(r.snapshot) for r in back] == data["snapshots"]
        assert import_unsaved(store, outcome.kept) is None  # not stored twice
        assert len(store.list()) == len(runs)


async def test_a_save_that_meets_a_lock_saves_when_it_goes(db: Path) -> None:
    snapshot = make_snapshot()
    with Store(db) as store:
        lock = Lock(db).take()
        try:
            outcome = await save_or_keep(
                store, Unsaved((snapshot,)), say=lambda _line: lock.release(), attempt_s=0.01
            )
        finally:
            lock.join()
        assert outcome.saved and not outcome.interrupted and outcome.kept is None
        assert outcome.ids == [s.id for s in store.list()]
    assert pending() == []


async def test_the_way_out_keeps_the_result_at_once(db: Path) -> None:
    """Ctrl-C (a cancellation) while waiting: the result is kept, nothing is stored."""
    with Store(db) as store, locked(db):
        waiting = asyncio.Event()
        task = asyncio.create_task(
            save_or_keep(
                store, Unsaved((make_snapshot(),)), say=lambda _l: waiting.set(), attempt_s=0.01
            )
        )
        await waiting.wait()
        task.cancel()
        outcome = await task
        assert store.list() == []
    assert outcome.interrupted and not outcome.saved and outcome.kept is not None
    assert outcome.message().startswith("could not save the snapshot: interrupted while waiting")
    assert pending() == [outcome.kept]


async def test_a_store_that_cannot_write_keeps_the_result(db: Path) -> None:
    with Store(db) as store:
        store._db.execute("PRAGMA query_only = ON")  # as on read-only media
        outcome = await save_or_keep(store, Unsaved((make_snapshot(),)))
    assert outcome.why is not None and "is read-only" in outcome.why
    assert outcome.kept is not None
    assert read_unsaved(outcome.kept).snapshots == (make_snapshot(),)


async def test_with_nowhere_to_keep_it_the_result_comes_back_as_text(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_args: object, **_options: object) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(saving, "keep_unsaved", full)
    with Store(db) as store:
        store._db.execute("PRAGMA query_only = ON")
        outcome = await save_or_keep(store, Unsaved((make_snapshot(),)))
    assert outcome.kept is None and outcome.text is not None
    assert "no file could be written (No space left on device)" in outcome.message()
    assert json.loads(outcome.text)["format"] == FORMAT


def test_import_takes_every_waiting_file_and_removes_it(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from specmon.storage.unsaved import keep_unsaved

    first = keep_unsaved(Unsaved((make_snapshot(),)), "locked", db)
    second = keep_unsaved(Unsaved.of_ab(ab(1_760_000_000.0)), "locked", db)
    elsewhere = tmp_path / "copy.json"
    elsewhere.write_text(first.read_text())
    assert main(["snapshots", "--db", str(db), "import"]) == 0
    out = capsys.readouterr().out
    assert f"Imported {first}: 1 snapshot(s)" in out and f"Imported {second}: 8" in out
    assert pending() == []
    assert main(["snapshots", "--db", str(db), "import", str(elsewhere)]) == 0
    assert capsys.readouterr().out == f"{elsewhere}: already in {db} (imported before)\n"
    assert elsewhere.exists()  # not ours to remove
    with Store(db) as store:
        assert len(store.list()) == 9
    assert main(["snapshots", "--db", str(db), "import"]) == 0
    assert capsys.readouterr().out.startswith("Nothing to import: no results waiting in ")


def test_import_refuses_what_is_not_a_kept_result(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    assert main(["snapshots", "--db", str(db), "import", str(bad), str(deep)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"specmon: error: {bad} is not an unsaved specmon result",
        f"specmon: error: {deep} is not an unsaved specmon result (not JSON)",
    ]
    with pytest.raises(UnsavedError, match="cannot read"):
        read_unsaved(tmp_path / "missing.json")
