"""The layering rule (docs/development.md, Layout and layers): only specmon.ui imports Textual
or Rich."""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

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


def test_the_exporter_reads_figures_from_the_session() -> None:
    """It serves the View's figures: it computes none (no pooling, comparison or validity)."""
    for module in ("specmon.exporter.metrics", "specmon.exporter.server"):
        bad = {
            m
            for m in _imports(module)
            if m.startswith(("specmon.sources.probe", "specmon.measure.bench"))
            or m
            in (
                "specmon.analysis.pooled",
                "specmon.analysis.comparison",
                "specmon.analysis.validity",
            )
        }
        assert not bad, f"{module} imports {bad}"


@pytest.mark.slow
def test_the_cli_loads_textual_only_for_the_dashboard() -> None:
    code = (
        "import sys\nfrom specmon.cli import build_parser\nbuild_parser()\n"
        "print('textual' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _imports(module: str, *, runtime_only: bool = False) -> set[str]:
    """The specmon modules a module's source imports (by its `import` statements); with
    `runtime_only`, less those under `if TYPE_CHECKING:` (annotations only)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if runtime_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("specmon")}


def _part(module: str) -> str:
    """The layer a module belongs to: its package under specmon (`specmon.session`), or the
    module itself for one at the root (`specmon.config`)."""
    return ".".join(module.split(".")[:2])


EVERY_MODULE = sorted(m.name for m in pkgutil.walk_packages(specmon.__path__, "specmon."))


def _layer_graph() -> dict[str, set[str]]:
    """Which layer imports which, at run time (docs/development.md, "Layout and layers")."""
    graph: dict[str, set[str]] = {}
    for module in EVERY_MODULE:
        for imported in _imports(module, runtime_only=True):
            if _part(imported) != _part(module):
                graph.setdefault(_part(module), set()).add(_part(imported))
    return graph


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every layer `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for layer in graph.get(todo.pop(), ()):
            if layer not in seen:
                seen.add(layer)
                todo.append(layer)
    return seen


@pytest.mark.slow
def test_the_layers_import_each_other_one_way() -> None:
    """No cycle between layers: a layer that reaches itself through its imports is tangled."""
    graph = _layer_graph()
    tangled = sorted(layer for layer in graph if layer in _reaches(graph, layer))
    assert not tangled, f"layers in an import cycle: {tangled}"
    assert {"specmon.session", "specmon.launch", "specmon.config"} <= set(graph)


@pytest.mark.slow
def test_the_session_and_launch_reach_neither_the_other_and_config_no_source() -> None:
    """A session watches servers and `launch` starts them: neither layer reaches the other (a
    server specmon launched comes to the session as a `Relauncher`, handed in by the command);
    the settings are plain values every layer reads (config -> sources would load the HTTP
    client to parse them)."""
    graph = _layer_graph()
    assert "specmon.launch" not in _reaches(graph, "specmon.session")
    assert "specmon.session" not in _reaches(graph, "specmon.launch")
    below_config = _reaches(graph, "specmon.config")
    above = ("specmon.sources", "specmon.launch", "specmon.session")
    assert not {layer for layer in below_config if layer.startswith(above)}


UI = sorted(
    m.name
    for m in pkgutil.walk_packages(specmon.__path__, "specmon.")
    if m.name.startswith("specmon.ui")
)


def test_the_ui_imports_no_source_and_no_feature_that_does_io() -> None:
    # docs/design.md §2: the app keeps workers, message routing and rendering; the session does I/O.
    for module in UI:
        io = ("specmon.sources", "specmon.measure.bench", "specmon.launch")
        bad = {m for m in _imports(module) if m.startswith(io)}
        assert not bad, f"{module} imports {bad}"


def test_analysis_is_pure() -> None:
    """analysis/ holds functions and frozen values: no class keeps state between calls; so do
    the what-if's model, its inputs, its bands and its advisor (specmon/whatif, the parts
    below its live view and its measurement)."""
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
        assert not {
            m for m in _imports(name) if m.startswith(("specmon.sources", "specmon.session"))
        }
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name:
                continue
            frozen = dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
            assert frozen or issubclass(cls, enum.Enum), f"{name}.{cls.__name__} keeps state"
