"""Issue 25: a crash inside the dashboard exits 70 with one line, its traceback in a file."""

from __future__ import annotations

import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from textual.pilot import Pilot

from specmon.cli import main
from specmon.cli.crash import EXIT_CRASHED, run_dashboard, write_crash_log
from specmon.ui.app import SpecmonApp
from specmon.ui.widgets.baseline_panel import BaselinePanel

FORMAT_ERROR = "Sign not allowed in string format specifier"


def _raise(_: object) -> None:
    raise ValueError(FORMAT_ERROR)


def test_a_widget_that_raises_exits_70_with_one_line_and_a_traceback_file(
    make_app: Callable[..., SpecmonApp],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(BaselinePanel, "on_mount", _raise)
    app = make_app()
    monkeypatch.setattr(app, "run", partial(app.run, headless=True))
    assert run_dashboard(app) == EXIT_CRASHED
    out, err = capsys.readouterr()
    assert not out and len(err.splitlines()) == 1, err  # Textual's traceback is not printed
    (log,) = (tmp_path / "state" / "specmon" / "log").iterdir()
    assert err == (
        f"specmon: error: the dashboard crashed: ValueError: {FORMAT_ERROR} (its "
        f"traceback is in {log}: attach that file to a bug report)\n"
    )
    text = log.read_text()
    assert "Traceback" in text and "in _raise" in text and text.endswith(f"{FORMAT_ERROR}\n")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_a_dashboard_the_user_quits_exits_0(
    make_app: Callable[..., SpecmonApp],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def quit_(pilot: Pilot[None]) -> None:
        await pilot.press("q")

    app = make_app()
    monkeypatch.setattr(app, "run", partial(app.run, headless=True, auto_pilot=quit_))
    assert run_dashboard(app) == 0
    assert capsys.readouterr() == ("", "")


def test_the_traceback_goes_to_the_temp_dir_when_the_log_dir_cannot_be_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "state").write_text("a file where the log dir's parent should be")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    path = write_crash_log("Traceback …")
    assert path.parent == tmp_path / "tmp" and path.name.startswith("specmon-crash-")
    assert path.read_text() == "Traceback …"


@pytest.mark.parametrize(
    "argv",
    [
        ["--url", "http://127.0.0.1:9"],
        ["--url", "http://127.0.0.1:9", "--url", "http://127.0.0.1:10"],
        ["demo"],
    ],
    ids=["dashboard", "fleet", "demo"],
)
def test_the_commands_exit_70_when_their_dashboard_crashes(
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`specmon`, the fleet and `demo` return what the crash report says (they returned 0)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(SpecmonApp, "run_to_end", lambda self: ValueError(FORMAT_ERROR))
    db = [] if argv == ["demo"] else ["--db", str(tmp_path / "s.db")]
    assert main([*argv, *db]) == EXIT_CRASHED
    assert capsys.readouterr().err.startswith(
        f"specmon: error: the dashboard crashed: ValueError: {FORMAT_ERROR} (its traceback is in "
    )
