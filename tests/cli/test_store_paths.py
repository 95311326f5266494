"""Commands that read the store never create one: a mistyped --db is a one-line error naming it,
and a default store not made yet reads as "nothing saved"."""

from __future__ import annotations

from pathlib import Path

import pytest

from specmon.cli import main
from specmon.reports.check_report import EXIT_STORE, EXIT_UNREACHABLE

CLOSED = "127.0.0.1:1"  # nothing listens: a command that got as far as the server fails there
READERS = {
    "snapshots list": (["snapshots", "list"], 1),
    "snapshots show": (["snapshots", "show", "1"], 1),
    "snapshots compare": (["snapshots", "compare", "1", "2", "--offline"], 1),
    "snapshots export": (["snapshots", "export", "--offline"], 1),
    "check": (["check", CLOSED], EXIT_STORE),
    "whatif": (["whatif", CLOSED], 1),
    "history": (["history", CLOSED], 1),
}


@pytest.mark.parametrize("name", READERS)
def test_a_mistyped_db_is_named_and_nothing_is_created(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, code = READERS[name]
    db = tmp_path / "typo" / "x.db"
    assert main([*argv, "--db", str(db)]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"specmon: error: no snapshot store at {db} (no such folder)")
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", READERS)
@pytest.mark.parametrize("how", ["SPECMON_DB", "config file", "--config"])
def test_every_reader_opens_the_store_the_settings_name(
    name: str,
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `db =` in the config file and SPECMON_DB reached the dashboard but not `snapshots`,
    # `check` or `whatif` (`check --config` was refused): baselines ended up in two stores.
    argv, code = READERS[name]
    db = tmp_path / "named" / "x.db"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("SPECMON_DB", raising=False)
    toml = tmp_path / "config" / "specmon" / "config.toml"
    toml.parent.mkdir(parents=True)
    extra: list[str] = []
    if how == "SPECMON_DB":
        monkeypatch.setenv("SPECMON_DB", str(db))
    else:
        if how == "--config":
            toml = tmp_path / "elsewhere.toml"
            extra = ["--config", str(toml)]
        toml.write_text(f'db = "{db}"\n')
    assert main([*argv, *extra]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"specmon: error: no snapshot store at {db} (no such folder)"), err


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the default store would be made: nothing saved on this machine yet."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    return tmp_path


def test_no_default_store_yet_lists_nothing_and_makes_none(
    data_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["snapshots", "list"]) == 0
    assert capsys.readouterr().out == (
        f"No snapshots: none saved yet ({data_home / 'specmon' / 'specmon.db'} does not exist)\n"
    )
    assert main(["snapshots", "show", "1"]) == 1
    assert "no snapshot store at" in capsys.readouterr().err
    assert main(["history", CLOSED, "--json"]) == 0
    store = data_home / "specmon" / "specmon.db"
    assert capsys.readouterr().out == f"No history: nothing recorded yet ({store} does not exist)\n"
    assert list(data_home.iterdir()) == []


def test_check_without_a_default_store_checks_the_server_and_makes_none(
    data_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", CLOSED]) == EXIT_UNREACHABLE  # the server's verdict, not the store's
    assert "no snapshot store" not in capsys.readouterr().err
    assert list(data_home.iterdir()) == []


def test_check_on_a_corrupt_store_is_its_own_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was exit 0 with "the store holds no baseline", the corruption only a warning."""
    db = tmp_path / "db"
    db.write_bytes(b"this is not SQLite\n" * 100)
    assert main(["check", CLOSED, "--db", str(db)]) == EXIT_STORE
    assert capsys.readouterr().err == (
        f"specmon: error: {db} is not a specmon store (corrupted?): move it away or pass --db\n"
    )


@pytest.mark.parametrize("once", [False, True])
def test_the_dashboard_refuses_a_corrupt_store_as_check_does(
    once: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It opened with "no snapshot store: baselines are not saved"; now it stops before
    Textual starts (and before a --record file is made), with check's message and code."""
    db = tmp_path / "db"
    db.write_bytes(b"this is not SQLite\n" * 100)
    record = tmp_path / "session.jsonl"
    argv = ["--url", CLOSED, "--db", str(db)]
    argv += ["--once", "--json"] if once else ["--record", str(record)]
    assert main(argv) == EXIT_STORE
    assert capsys.readouterr().err == (
        f"specmon: error: {db} is not a specmon store (corrupted?): move it away or pass --db\n"
    )
    assert not record.exists()
