"""`specmon ab` whose store another process keeps locked at save time loses nothing: the A/B
(real simulator servers, launched and benched) is saved when the lock goes, or kept in a file
that `specmon snapshots import` puts into the store, never discarded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ab_helpers import free_port

from specmon.analysis.ab_runs import Side
from specmon.analysis.validity import fingerprint
from specmon.cli import ab as ab_cli
from specmon.cli import main
from specmon.storage import saving
from specmon.storage.store import Store
from specmon.storage.unsaved import pending, read_unsaved
from tests.storage.test_saving import Lock

pytestmark = pytest.mark.slow  # launches simulator processes

SIM = [sys.executable, "-m", "specmon.sim", "--plain-step-ms", "6", "--cycle-ms", "9",
       "--ttft-ms", "5", "--speculative-algorithm", "NGRAM",
       "--speculative-num-draft-tokens", "4", "--accept-length", "2.5"]  # fmt: skip


def ab(db: Path) -> list[str]:
    return ["ab", "--db", str(db), "--json", "--rounds", "1", "--runs", "2", "--max-tokens",
            "32", "--concurrency", "1,2", "--", *SIM, "--port", str(free_port())]  # fmt: skip


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(saving, "ATTEMPT_S", 0.05)


def test_an_ab_whose_store_stays_locked_is_kept_whole_and_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock outlasts the wait (shortened here; `test_saving` runs the 10-minute default on
    a fast clock): the table and report are printed, the A/B is kept, exit 1, and the import
    stores all four benches as the A/B they were."""
    monkeypatch.setattr(saving, "DEFAULT_PATIENCE_S", 0.5)
    db = tmp_path / "s.db"
    Store(db).close()
    lock = Lock(db).take()
    try:
        code = main(ab(db))
        with Store(db) as store:
            assert store.list() == []
    finally:
        lock.join()
    out = capsys.readouterr()
    assert code == 1, out.err
    report = json.loads(out.out)
    assert report["snapshot_ids"] == [] and len(report["configs"][0]["levels"]) == 2
    assert "is locked by another process: waiting to save the A/B's 4 snapshots" in out.err
    errors = [line for line in out.err.splitlines() if line.startswith("specmon: error")]
    assert len(errors) == 1 and "could not save the A/B's 4 snapshots" in errors[0]
    [kept] = pending()
    assert (
        f"kept in {kept}: put it into the store with specmon snapshots import --db {db}"
        in (errors[0])
    )
    runs = read_unsaved(kept).ab
    assert runs is not None
    assert [r.side for r in runs] == [Side.BASELINE] * 2 + [Side.SPECULATIVE] * 2

    assert main(["snapshots", "--db", str(db), "import"]) == 0
    assert pending() == []
    with Store(db) as store:
        back = store.latest_ab(fingerprint(runs[0].snapshot.server.args))
    assert [(r.round, r.side, r.snapshot.protocol.concurrency) for r in back] == [
        (r.round, r.side, r.snapshot.protocol.concurrency) for r in runs
    ]


def test_an_ab_saves_when_the_lock_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    Store(db).close()
    lock = Lock(db).take()

    def note(line: str) -> None:  # the first progress line: the other process lets go
        print(f"specmon: {line}", file=sys.stderr)
        lock.release()

    monkeypatch.setattr(ab_cli, "note", note)
    try:
        code = main(ab(db))
    finally:
        lock.join()
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "is locked by another process: waiting to save" in out.err
    report = json.loads(out.out)
    with Store(db) as store:
        assert sorted(report["snapshot_ids"]) == sorted(s.id for s in store.list())
    assert len(report["snapshot_ids"]) == 4
    assert pending() == []
