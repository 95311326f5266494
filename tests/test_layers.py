"""The layering rule (docs/development.md, Layout and layers) where an import statement cannot
show it: no headless module loads Textual or Rich when imported, even through a dependency, and
analysis keeps no state. Which module may import which is .importlinter's
(tests/test_contracts.py)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import specmon

HEADLESS = sorted(
    m.name
    for m in pkgutil.walk_packages(specmon.__path__, "specmon.")
    if not m.name.startswith(("specmon.ui", "specmon.__main__"))
)


@pytest.mark.slow
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
    assert {"specmon.sources.sampler", "specmon.sources.scrape_memo"} <= set(HEADLESS)
    assert "specmon.launch.ab" in HEADLESS  # launched servers: headless too
    assert {"specmon.cli.whatif", "specmon.whatif.measure", "specmon.whatif.text"} <= set(HEADLESS)
    assert {
        "specmon.session.fleet",
        "specmon.session.fleet_row",
        "specmon.exporter.metrics",
        "specmon.exporter.server",
        "specmon.cli.exporter",
    } <= set(HEADLESS)
    assert {"specmon.session.feed", "specmon.session.hub", "specmon.cli.web"} <= set(HEADLESS)


@pytest.mark.slow
def test_the_cli_loads_textual_only_for_the_dashboard() -> None:
    code = (
        "import sys\nfrom specmon.cli import build_parser\nbuild_parser()\n"
        "print('textual' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_analysis_is_pure() -> None:
    """analysis/ holds functions and frozen values: no class keeps state between calls; so do
    the what-if's model, its inputs, its bands and its advisor (specmon/whatif, the parts
    below its live view and its measurement). What they import is .importlinter's."""
    import dataclasses
    import enum
    import importlib
    import inspect

    analysis = [m for m in HEADLESS if m.startswith("specmon.analysis.")]
    assert {"specmon.analysis.comparison", "specmon.analysis.cycle_model"} <= set(analysis)
    what_if = [f"specmon.whatif.{m}" for m in ("prediction", "inputs", "by_band", "advice")]
    assert set(what_if) <= set(HEADLESS)
    for name in analysis + what_if:
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name:
                continue
            frozen = dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
            # A base of methods only: no slots to hold anything, no __init__ (`catalogue._Written`).
            methods_only = cls.__dict__.get("__slots__") == () and "__init__" not in cls.__dict__
            assert frozen or methods_only or issubclass(cls, enum.Enum), (
                f"{name}.{cls.__name__} keeps state"
            )
