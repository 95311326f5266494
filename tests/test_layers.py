"""The layering rule (DESIGN.md §2): only specmon.ui imports Textual or Rich."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import specmon

HEADLESS = sorted(
    m.name
    for m in pkgutil.walk_packages(specmon.__path__, "specmon.")
    if not m.name.startswith(("specmon.ui", "specmon.__main__"))
)


def test_every_headless_module_imports_without_textual_or_rich() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {HEADLESS!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    assert "specmon.cli.bench" in HEADLESS
    assert "specmon.sources.sampler" in HEADLESS


def test_the_cli_loads_textual_only_for_the_dashboard() -> None:
    code = (
        "import sys\nfrom specmon.cli import build_parser\nbuild_parser()\n"
        "print('textual' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
