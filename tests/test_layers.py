"""The layering rule (docs/development.md, Layout and layers): only specmon.ui imports Textual
or Rich."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

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
    assert {"specmon.sources.sampler", "specmon.sources.scrape_memo"} <= set(HEADLESS)
    assert "specmon.launch.ab" in HEADLESS  # launched servers: headless too
    assert {"specmon.cli.whatif", "specmon.session.whatif", "specmon.whatif_text"} <= set(HEADLESS)
    assert {"specmon.session.fleet", "specmon.session.fleet_row", "specmon.exporter.metrics",
            "specmon.exporter.server", "specmon.cli.exporter"} <= set(HEADLESS)  # fmt: skip
    assert {"specmon.session.feed", "specmon.session.hub", "specmon.cli.web"} <= set(HEADLESS)


def test_the_exporter_reads_figures_from_the_session() -> None:
    """It serves the View's figures: it computes none (no pooling, comparison or validity)."""
    for module in ("specmon.exporter.metrics", "specmon.exporter.server"):
        bad = {m for m in _imports(module)
               if m.startswith(("specmon.sources.probe", "specmon.bench"))
               or m in ("specmon.analysis.pooled", "specmon.analysis.comparison",
                        "specmon.analysis.validity")}  # fmt: skip
        assert not bad, f"{module} imports {bad}"


def test_the_cli_loads_textual_only_for_the_dashboard() -> None:
    code = (
        "import sys\nfrom specmon.cli import build_parser\nbuild_parser()\n"
        "print('textual' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _imports(module: str) -> set[str]:
    """The specmon modules a module's source imports (by its `import` statements)."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("specmon")}


UI = sorted(m.name for m in pkgutil.walk_packages(specmon.__path__, "specmon.")
            if m.name.startswith("specmon.ui"))  # fmt: skip


def test_the_ui_imports_no_source_and_no_feature_that_does_io() -> None:
    # docs/design.md §2: the app keeps workers, message routing and rendering; the session does I/O.
    for module in UI:
        io = ("specmon.sources", "specmon.bench", "specmon.launch")
        bad = {m for m in _imports(module) if m.startswith(io)}
        assert not bad, f"{module} imports {bad}"


def test_analysis_is_pure() -> None:
    """analysis/ holds functions and frozen values: no class keeps state between calls."""
    import dataclasses
    import enum
    import importlib
    import inspect

    analysis = [m for m in HEADLESS if m.startswith("specmon.analysis.")]
    assert "specmon.analysis.comparison" in analysis
    what_if = {"acceptance", "cycle_model", "whatif", "whatif_inputs", "advice"}
    assert {f"specmon.analysis.{m}" for m in what_if} <= set(analysis)
    for name in analysis:
        module = importlib.import_module(name)
        assert not {
            m for m in _imports(name) if m.startswith(("specmon.sources", "specmon.session"))
        }
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name:
                continue
            frozen = dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
            assert frozen or issubclass(cls, enum.Enum), f"{name}.{cls.__name__} keeps state"
