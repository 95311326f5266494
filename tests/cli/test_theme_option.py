"""An unknown theme is refused before the dashboard starts, wherever it was given (it was
accepted, and only an event in the log said so)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specmon.cli import demo, launch, main, monitor

KNOWN = "known: specmon-dark, specmon-high-contrast, specmon-light, textual-dark"


@pytest.fixture(autouse=True)
def no_dashboard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Had the theme got through, the dashboard would start: it fails the test instead."""

    def started(*_args: object) -> int:
        raise AssertionError("the dashboard started")

    for module in (monitor, launch, demo):
        monkeypatch.setattr(module, "run_dashboard", started)


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"specmon: error: unknown theme 'nosuch'; {KNOWN}")
    assert err.count("\n") == 1 and "nord" in err


def test_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    _refused(["--theme", "nosuch", "--url", "127.0.0.1:1"], capsys)
    _refused(["demo", "--theme", "nosuch"], capsys)
    server = [sys.executable, "-m", "specmon.sim", "--port", "1"]
    _refused(["launch", "--theme", "nosuch", "--", *server], capsys)  # before launching it


def test_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SPECMON_THEME", "nosuch")
    _refused(["--url", "127.0.0.1:1"], capsys)


def test_from_the_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text('theme = "nosuch"\n')
    _refused(["--url", "127.0.0.1:1", "--config", str(config)], capsys)
