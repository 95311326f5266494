"""Every change to Textual's internals is installed by `specmon.ui.tuning.install`, checked
first: on a Textual that differs the dashboard runs without it and says so; importing changes
nothing; every private name touched is listed."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import rich
import textual

from specmon.ui import UnsupportedTextual, check_textual, tuning

ROOT = Path(__file__).parents[2]
UI = ROOT / "specmon" / "ui"
TUNING = UI / "tuning"
RUN = Path(__file__).with_name("tuning_run.py")
STOCK = os.environ.get(tuning.STOCK_ENV, "") not in ("", "0")

SPECMON_OWN = {
    "_build", "_cells", "_clock", "_data", "_lines", "_loop", "_pending", "_rows", "_select",
    "_size", "_theme", "_themes", "_values", "_width", "_write",
}  # fmt: skip
"""specmon's own attributes that share a name with a private one of Textual or Rich (each is
set on a specmon object, never read from a Textual one: `test_own_names_are_specmons`)."""


def _textual_private_names() -> set[str]:
    names = set()
    for package in (textual, rich):
        for path in Path(package.__file__).parent.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute):
                    names.add(node.attr)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(node.name)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _touched(path: Path, private: set[str]) -> set[str]:
    """Textual's (or Rich's) private modules imported, and private names used, in this file."""
    touched = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in private:
            touched.add(node.attr)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            modules = (
                [node.module]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
            )
            touched |= {m for m in modules if m and re.match(r"(textual|rich)(\.\w+)*\._", m)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            touched |= set(re.findall(r"^_[A-Z]\w*__\w+$", node.value))  # a mangled name
    return touched - SPECMON_OWN


def test_every_private_name_touched_is_listed_and_only_in_tuning() -> None:
    private = _textual_private_names()
    outside = {
        str(path.relative_to(ROOT)): names
        for path in UI.rglob("*.py")
        if TUNING not in path.parents and (names := _touched(path, private))
    }
    assert outside == {}
    for name in tuning.TUNINGS:
        listed = set(tuning.tuning_module(name).PRIVATE_NAMES)
        assert _touched(TUNING / f"{name}.py", private) <= listed, name
    helpers = [p for p in TUNING.glob("*.py") if p.stem not in (*tuning.TUNINGS, "__init__")]
    for path in helpers:  # a module of the package that is not a tuning touches nothing
        assert _touched(path, private) == set(), path.name


def test_own_names_are_specmons() -> None:
    source = "\n".join(path.read_text() for path in UI.rglob("*.py"))
    for name in SPECMON_OWN:
        assert re.search(rf"(self\.{name}\b.*=|def {name}\b)", source), name


@pytest.mark.skipif(STOCK, reason="stock Textual: nothing installed")
def test_the_pinned_textual_takes_every_tuning() -> None:
    assert textual.__version__ == tuning.CHECKED_AGAINST
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert f"textual=={tuning.CHECKED_AGAINST}" in pyproject["project"]["dependencies"]
    assert tuning.install() == []
    assert all(tuning.active(name) for name in tuning.TUNINGS)


def _run(mode: str, **env: str) -> dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if k not in ("ESCDELAY", tuning.STOCK_ENV)}
    done = subprocess.run(
        [sys.executable, str(RUN), mode],
        capture_output=True,
        text=True,
        env={**environ, **env},
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_importing_the_ui_changes_nothing_in_textual() -> None:
    code = (
        "import os, specmon.ui, specmon.ui.app, specmon.ui.tuning, textual.constants as c;"
        "from textual.strip import Strip;"
        "print(os.environ.get('ESCDELAY'), c.ESCAPE_DELAY, Strip.__init__.__module__)"
    )
    environ = {k: v for k, v in os.environ.items() if k != "ESCDELAY"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["None", "0.1", "textual.strip"]


def test_on_a_textual_that_renamed_its_internals_the_dashboard_runs_and_says_so() -> None:
    """Each tuning finds what it reaches into changed (tuning_run.py renames it) and stands
    down; the dashboard opens its screens and runs its housekeeping without an error."""
    result = _run("renamed")
    assert result["installed"] == []
    assert result["alive"] is True and result["exception"] == "None"
    assert result["strip_init"] == "textual.strip"
    events = result["events"]
    assert isinstance(events, list)
    stood_down = [line for line in events if " stood down: " in line]
    assert [line.split("'")[1] for line in stood_down] == list(tuning.TUNINGS)
    assert "tuning 'render_cache' stood down: StylesCache.get_inner_outer has no cache_clear" in (
        stood_down
    )
    assert "tuning 'strip_caches' stood down: Strip's slots differ (+_new_cache)" in stood_down


def test_stock_textual_installs_nothing_and_runs() -> None:
    result = _run("stock", **{tuning.STOCK_ENV: "1"})
    assert result["installed"] == [] and result["strip_init"] == "textual.strip"
    assert result["alive"] is True and result["exception"] == "None"
    events = result["events"]
    assert isinstance(events, list)
    assert f"stock Textual ({tuning.STOCK_ENV}=1): no tuning installed" in events


@pytest.mark.skipif(STOCK, reason="stock Textual: nothing installed")
def test_tuned_the_dashboard_says_nothing_of_tuning() -> None:
    result = _run("tuned")
    assert result["installed"] == list(tuning.TUNINGS)
    assert result["strip_init"] == "specmon.ui.tuning.strip_caches"
    events = result["events"]
    assert isinstance(events, list) and not [line for line in events if "tuning" in line]


def test_outside_the_release_they_were_written_for_every_tuning_stands_down() -> None:
    notes = tuning._install({}, "8.3.0")
    assert notes == [f"Textual 8.3.0, not {tuning.CHECKED_AGAINST}: no tuning installed"]


@pytest.mark.parametrize("version", ["6.12.0", "8.1.9", "0.86.3", "garbage"])
def test_an_older_textual_is_refused_with_the_pin_to_install(version: str) -> None:
    with pytest.raises(UnsupportedTextual, match=rf"Textual {version}: pip install 'textual=="):
        check_textual(version)


@pytest.mark.parametrize("version", [tuning.CHECKED_AGAINST, "8.2.0", "8.4.1", "9.0.0"])
def test_the_pinned_release_and_newer_ones_run(version: str) -> None:
    check_textual(version)


def test_the_demo_on_an_old_textual_says_so_and_exits_instead_of_hanging() -> None:
    code = (
        "import sys, textual; textual.__version__ = '6.12.0';"
        "from specmon.cli import main; sys.exit(main(['demo']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "specmon: error: the dashboard needs Textual 8.2 or newer, and this Python has Textual "
        f"6.12.0: pip install 'textual=={tuning.CHECKED_AGAINST}'"
    )
