"""The store under faults: a full disk, a read-only store, a corrupted file. A bench's figures are
never lost (printed even when they cannot be saved), nothing partial is stored, and a store that
cannot be read is a one-line error; only the dashboard carries on without one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_cases import FAST

from specmon.cli import common, main
from specmon.cli.monitor import open_store_or_warn
from specmon.reports.check_report import EXIT_STORE
from specmon.sim import SimThread
from specmon.storage.store import Store

BENCH = ("--runs", "2", "--warmup", "0", "--max-tokens", "12")


class FullStore(Store):
    """A store on a disk with no room left: SQLite answers SQLITE_FULL to any growth."""

    def __init__(self, path: Path, **options: bool) -> None:
        super().__init__(path, **options)
        pages = self._db.execute("PRAGMA page_count").fetchone()[0]
        self._db.execute(f"PRAGMA max_page_count = {pages}")


class ReadOnlyStore(Store):
    """A store SQLite may only read (as on read-only media)."""

    def __init__(self, path: Path, **options: bool) -> None:
        super().__init__(path, **options)
        self._db.execute("PRAGMA query_only = ON")


@pytest.fixture
def sim() -> Iterator[SimThread]:
    with SimThread(FAST) as thread:
        yield thread


@pytest.mark.parametrize(
    ("store", "cause"),
    [(FullStore, "the disk is full"), (ReadOnlyStore, "is read-only")],
    ids=["full disk", "read-only"],
)
def test_bench_prints_its_figures_when_it_cannot_save(
    store: type[Store],
    cause: str,
    sim: SimThread,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = tmp_path / "db"
    monkeypatch.setattr(common, "Store", store)
    code = main(["bench", sim.url, *BENCH, "--db", str(db)])
    out = capsys.readouterr()
    assert code == 1
    assert "Pooled over 2 runs" in out.out  # the figures are not lost
    errors = [line for line in out.err.splitlines() if line.startswith("specmon: error")]
    assert len(errors) == 1 and "could not save the snapshot" in errors[0], out.err
    assert cause in errors[0]
    with Store(db) as reopened:
        assert reopened.list() == []  # nothing partial
    # ... and the snapshot itself is kept in a file, for `snapshots import` once the store can
    kept = Path(errors[0].split("; kept in ")[1].split(": put it into")[0])
    assert f"specmon snapshots import --db {db} {kept}" in errors[0]
    monkeypatch.setattr(common, "Store", Store)  # the disk has room again
    assert main(["snapshots", "--db", str(db), "import", str(kept)]) == 0
    with Store(db) as reopened:
        assert [len(s.runs) for s in reopened.list()] == [2]


def test_corrupted_store(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    db.write_bytes(b"this is not SQLite\n" * 100)
    code = main(["bench", sim.url, *BENCH, "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"specmon: error: {db} is not a specmon store (corrupted?)")
    assert err.count("\n") == 1
    assert sim.server.emitted == []  # it failed before running anything
    code = main(["check", sim.url, "--probe-tokens", "12", "--db", str(db)])
    out = capsys.readouterr()
    assert code == EXIT_STORE  # not "no baseline": the store it was told to read is unreadable
    assert out.err.startswith(f"specmon: error: {db} is not a specmon store")
    assert out.err.count("\n") == 1
    assert main(["snapshots", "--db", str(db), "list"]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert db.read_bytes() == b"this is not SQLite\n" * 100  # left as it was


def test_the_dashboard_runs_without_a_corrupted_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    db.write_bytes(b"this is not SQLite\n" * 100)
    assert open_store_or_warn(str(db)) is None  # the app then says "no snapshot store"
    assert capsys.readouterr().err == (
        f"specmon: warning: snapshots cannot be saved: {db} is not a specmon store (corrupted?):"
        " move it away or pass --db\n"
    )
