"""The import contracts (.importlinter, checked by import-linter's `lint-imports`;
docs/development.md, "Layout and layers"): they hold on the tree, and a forbidden import planted
in a copy of it breaks the contract that names it."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".importlinter"


def _checker() -> str:
    """import-linter's `lint-imports`, which lives in a venv of its own (docs/development.md,
    "Layout and layers"): $SPECMON_LINT_IMPORTS (CI sets it), else .venv-lint's, else one on
    the PATH."""
    named = os.environ.get("SPECMON_LINT_IMPORTS")
    if named:
        return named  # named and missing fails the tests: CI installed it
    beside = ROOT / ".venv-lint" / "bin" / "lint-imports"
    found = str(beside) if beside.exists() else shutil.which("lint-imports")
    if found is None:
        pytest.skip(
            "no lint-imports: python3 -m venv .venv-lint && .venv-lint/bin/pip install "
            "import-linter (or set SPECMON_LINT_IMPORTS)"
        )
    return found


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` in `tree` (its .importlinter), over the `specmon` package found first on
    the path: the one in `tree`."""
    lint = _checker()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(lint), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=100,
    )


def test_the_contracts_hold_on_the_tree() -> None:
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package and its contracts, to plant imports in."""
    tree = tmp_path_factory.mktemp("tree")
    shutil.copy(CONFIG, tree / ".importlinter")
    caches = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "specmon", tree / "specmon", ignore=caches)
    return tree


# (the module planted, or added to, what it imports, the contract that must fail)
PLANTED = [
    ("specmon/analysis/planted.py", "from specmon.sources import http", "analysis is pure"),
    ("specmon/analysis/planted.py", "import sqlite3", "analysis is pure"),
    ("specmon/sources/planted.py", "import textual", "Only specmon.ui imports Textual"),
    ("specmon/sources/planted.py", "from specmon.session import view", "Layers"),
    ("specmon/session/planted.py", "from specmon.launch import ab", "Layers"),
    ("specmon/config.py", "from specmon.sources import http", "Layers"),
    ("specmon/ui/widgets/planted.py", "from specmon.sources import probe", "no I/O of its own"),
    ("specmon/ui/widgets/planted.py", "from specmon.session import live", "through the session"),
    ("specmon/ui/widgets/planted.py", "from specmon.exporter import metrics", "independent"),
    ("specmon/exporter/planted.py", "from specmon.analysis import pooled", "computes none"),
]


@pytest.mark.parametrize(("where", "imports", "contract"), PLANTED)
def test_a_planted_forbidden_import_breaks_its_contract(
    tree_copy: Path, where: str, imports: str, contract: str
) -> None:
    planted = tree_copy / where
    before = planted.read_text(encoding="utf-8") if planted.exists() else None
    planted.write_text((before or "") + imports + "\n", encoding="utf-8")
    try:
        out = _lint(tree_copy)
    finally:
        if before is None:
            planted.unlink()
        else:
            planted.write_text(before, encoding="utf-8")
    assert out.returncode != 0, out.stdout
    module = where.removesuffix(".py").replace("/", ".")
    broken = out.stdout.split("Broken contracts", 1)[-1]
    assert module in broken, out.stdout
    assert contract in broken, out.stdout


def test_each_ignored_import_says_why() -> None:
    """An `ignore_imports` line is a named exception to a contract: each follows a comment that
    says why it stands (one comment may cover the lines right after it)."""
    parser = configparser.ConfigParser()
    parser.read(CONFIG, encoding="utf-8")
    ignored = [
        line.strip()
        for section in parser.sections()
        for line in parser[section].get("ignore_imports", "").splitlines()
        if line.strip()
    ]
    lines = [line.strip() for line in CONFIG.read_text(encoding="utf-8").splitlines()]
    for entry in ignored:
        above = lines[: lines.index(entry)]
        while above and above[-1] in ignored:
            above.pop()
        assert above and above[-1].startswith("#"), f"no reason given for {entry}"
