"""The backend seam (docs/development.md, "Adding a backend"): what differs between kinds of
server is in `specmon/backend_facts.py`, `specmon/sources/backends/<name>.py` and, for servers
specmon launches, the tables of `launch` (`split.KINDS`, `sweep.SWEEPS`); nothing else checks
which backend it has (the simulator, which speaks each kind, aside)."""

from __future__ import annotations

import ast
from pathlib import Path

import specmon
from specmon.backend_facts import FACTS

ROOT = Path(specmon.__file__).parent
ALLOWED = ("backend_facts.py", "sources/backends/", "sim/")
TABLES = ("KINDS", "SWEEPS")
"""`launch`'s tables of the server kinds it launches: their entries name programs and modules."""


def _exempt(tree: ast.AST) -> set[int]:
    """The nodes of the launch tables and of `__import__(…)` calls (a package's name, not a
    check of a server's)."""
    roots = [
        node
        for node in ast.walk(tree)
        if (
            isinstance(node, ast.AnnAssign | ast.Assign)
            and any(
                isinstance(t, ast.Name) and t.id in TABLES
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            )
        )
        or (isinstance(node, ast.Call) and ast.unparse(node.func) == "__import__")
    ]
    return {id(inner) for root in roots for inner in ast.walk(root)}


def _offences(source: str, where: str) -> list[str]:
    """A backend's name written out, a `ServerKind` member named, and a `.backend` compared
    with anything but another `.backend` or None (two servers of the same kind is a fair
    question, and whether the kind is known yet; which kind it is is not)."""
    found = []
    tree = ast.parse(source)
    exempt = _exempt(tree)
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.Constant) and node.value in FACTS:
            found.append(f"{where}:{node.lineno}: {node.value!r}")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "ServerKind"
        ):
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            backends = [s for s in sides if isinstance(s, ast.Attribute) and s.attr == "backend"]
            others = [s for s in sides if s not in backends]
            unset = all(isinstance(s, ast.Constant) and s.value is None for s in others)
            if backends and others and not unset:  # `x.backend is None`: known yet, not which
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_outside_the_seam_checks_a_backend_name() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(ALLOWED):
            continue
        found += _offences(path.read_text(encoding="utf-8"), relative)
    assert not found, "backend-name checks outside the seam:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_check() -> None:
    source = 'if info.backend == VLLM_NAME:\n    pass\nflag = {"llamacpp": 1}\n'
    assert len(_offences(source, "sample.py")) == 2
    assert not _offences("same = a.backend == b.backend\n", "sample.py")
    assert len(_offences("if kind == ServerKind.VLLM:\n    pass\n", "sample.py")) == 1
    table = 'KINDS = {ServerKind.VLLM: Kind(lambda p: p == "vllm")}\n__import__("sglang")\n'
    assert not _offences(table, "sample.py")


def test_every_backend_has_its_module_and_facts() -> None:
    from specmon.sources.backends import backends

    assert {b.facts.name: b.facts for b in backends()} == FACTS
    for backend in backends():
        assert (ROOT / "sources" / "backends" / f"{backend.name}.py").is_file()
