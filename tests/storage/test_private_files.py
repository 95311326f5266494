"""Output files are never written through a planted link, a recording is never replaced without
`--force`, crash logs are private, and a full disk is a message, not a traceback."""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path
from typing import IO, Any

import pytest

from specmon.cli import main
from specmon.cli.crash import write_crash_log
from specmon.session import recording
from specmon.session.recording import Header, RecordingError, RecordingWriter, read_recording
from specmon.storage import private_files
from specmon.storage.private_files import LINK_REFUSED, open_private
from specmon.storage.store import Store

VICTIM = "the victim's own text\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_text(VICTIM)
    path.chmod(0o644)
    return path


def untouched(victim: Path) -> bool:
    return victim.read_text() == VICTIM and stat.S_IMODE(victim.stat().st_mode) == 0o644


@pytest.mark.parametrize("mode", ["w", "a", "x"])
def test_a_link_is_never_written_through(tmp_path: Path, victim: Path, mode: str) -> None:
    link = tmp_path / "out"
    link.symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link") as caught:
        open_private(link, mode)
    assert caught.value.errno == errno.ELOOP and caught.value.strerror == LINK_REFUSED
    assert untouched(victim)


def test_a_dangling_link_is_not_followed_to_make_its_target(tmp_path: Path) -> None:
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "made-elsewhere")
    for mode in ("w", "x"):
        with pytest.raises(OSError, match="symbolic link"):
            open_private(link, mode)
    assert not (tmp_path / "made-elsewhere").exists()


def test_snapshots_export_refuses_a_link(
    tmp_path: Path, victim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Store(tmp_path / "db").close()
    link = tmp_path / "table.md"
    link.symlink_to(victim)
    code = main(["snapshots", "--db", str(tmp_path / "db"), "export", "-o", str(link)])
    assert code == 1
    assert capsys.readouterr().err == f"specmon: error: cannot write {link}: {LINK_REFUSED}\n"
    assert untouched(victim)


@pytest.mark.parametrize("force", [False, True])
def test_record_refuses_a_link_even_with_force(
    tmp_path: Path, victim: Path, capsys: pytest.CaptureFixture[str], force: bool
) -> None:
    link = tmp_path / "r.jsonl"
    link.symlink_to(victim)
    argv = ["record", "http://127.0.0.1:9", "--out", str(link), *(["--force"] * force)]
    code = main(argv)
    err = capsys.readouterr().err
    assert untouched(victim)
    if force:
        assert code == 1 and err == f"specmon: error: cannot record to {link}: {LINK_REFUSED}\n"
    else:
        assert code == 2 and err.startswith(f"specmon: error: {link} exists: pass --force")


def test_record_refuses_to_replace_a_recording_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evidence = tmp_path / "incident.jsonl"
    evidence.write_text("813 KB of an incident\n")
    code = main(["record", "http://127.0.0.1:9", "--out", str(evidence), "--duration", "1"])
    assert code == 2
    assert capsys.readouterr().err == (
        f"specmon: error: {evidence} exists: pass --force to replace it, or record to another "
        "file (a recording may be an incident's only evidence)\n"
    )
    assert evidence.read_text() == "813 KB of an incident\n"
    # The dashboard's --record the same (refused before anything opens).
    assert main(["--url", "http://127.0.0.1:9", "--record", str(evidence)]) == 2
    assert "exists: pass --force" in capsys.readouterr().err
    assert main(["--url", "http://127.0.0.1:9", "--force"]) == 2
    assert capsys.readouterr().err == (
        "specmon: error: --force replaces the --record FILE: give it with --record\n"
    )
    # The writer itself refuses too (a file made between the check and the open).
    with pytest.raises(RecordingError, match="it exists"):
        RecordingWriter(evidence, Header("http://h:1", 1.0, 1.0))
    RecordingWriter(evidence, Header("http://h:1", 1.0, 1.0), replace=True).close()
    assert read_recording(evidence).entries == ()


def _onto_a_full_disk(file: IO[Any]) -> None:
    """Every later write of `file` fails as on a full disk: its descriptor is /dev/full's."""
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, file.fileno())
    os.close(full)


def _full_disk(monkeypatch: pytest.MonkeyPatch, module: object) -> None:
    """`module`'s `open_private` opens files as it does, on a full disk."""

    def opened(path: Path, mode: str = "w", **options: Any) -> IO[Any]:
        file = open_private(path, mode, **options)
        _onto_a_full_disk(file)
        return file

    monkeypatch.setattr(module, "open_private", opened)


def test_a_recording_stops_cleanly_when_the_disk_fills(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path, Header("http://h:1", 100.0, 1.0))
    writer.write(101.0, "probe_failed", 101.0, "first")
    _onto_a_full_disk(writer._file)
    writer.write(102.0, "probe_failed", 102.0, "x" * 100)  # no room: it stops, no traceback
    writer.write(103.0, "probe_failed", 103.0, "after")  # nothing: stopped
    writer.close()
    assert writer.stopped == f"writing {path} failed: No space left on device"
    assert [e.args[1] for e in read_recording(path).entries] == ["first"]


def test_a_recording_that_cannot_start_for_a_full_disk_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _full_disk(monkeypatch, recording)
    path = tmp_path / "r.jsonl"
    with pytest.raises(RecordingError) as caught:
        RecordingWriter(path, Header("http://h:1", 100.0, 1.0))
    assert str(caught.value) == f"writing {path} failed: No space left on device"
    path.unlink()
    assert main(["record", "http://127.0.0.1:9", "--out", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"specmon: error: writing {path} failed: No space left on device\n"
    )


def test_an_export_on_a_full_disk_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    Store(tmp_path / "db").close()
    out = tmp_path / "t.md"
    _full_disk(monkeypatch, private_files)
    code = main(["snapshots", "--db", str(tmp_path / "db"), "export", "-o", str(out)])
    assert code == 1
    assert capsys.readouterr().err == (
        f"specmon: error: cannot write {out}: No space left on device\n"
    )


def test_crash_logs_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(time, "strftime", lambda *_args: "crash-A-")
    path = write_crash_log("Traceback …")
    assert path.name == f"crash-A-{os.getpid()}.log" and path.read_text() == "Traceback …"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # A link planted under the next crash's name: refused there, written to the temp dir.
    victim = tmp_path / "victim"
    victim.write_text(VICTIM)
    monkeypatch.setattr(time, "strftime", lambda *_args: "crash-B-")
    (path.parent / f"crash-B-{os.getpid()}.log").symlink_to(victim)
    again = write_crash_log("Traceback …")
    assert again.parent == tmp_path and again.name.startswith("specmon-crash-B-")
    assert stat.S_IMODE(again.stat().st_mode) == 0o600
    assert victim.read_text() == VICTIM
