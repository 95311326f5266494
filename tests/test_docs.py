"""What the documentation and `--help` say agrees with the repository and the code: links
resolve, examples obey the formulas of docs/metrics.md, the demo is described as it runs."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import httpx
import pytest

from specmon.analysis.validity import fingerprint
from specmon.backend_facts import FACTS
from specmon.cli import build_parser, main
from specmon.config import DEFAULT_HOST, DEFAULT_PORT
from specmon.sim import SimConfig, SimThread
from specmon.sim.__main__ import config_from_args
from specmon.sources.backends.sglang import parse_server_info

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    headings = re.findall(r"^#+ (.+)$", _text(path), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    for target in LINK.findall(_text(doc)):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        assert resolved.is_relative_to(ROOT) and resolved.exists(), f"{doc.name}: {target}"
        if anchor:
            assert anchor in _anchors(resolved), f"{doc.name}: {target}"


CITING = sorted(
    [ROOT / "pyproject.toml", *DOCS]
    + [
        p
        for top in ("specmon", "tests", "benchmarks", "ci")
        for p in (ROOT / top).rglob("*")
        if p.suffix in {".py", ".sh", ".tcss", ".md", ".toml"}
    ]
)
"""Every file that may cite a document: code, tests, benchmarks, CI scripts, pyproject, README,
docs."""
DOC_REFERENCE = re.compile(r"\bdocs/([\w-]+\.md)(?:#([\w-]+)| §(\d+(?:\.\d+)*))?")
OUTSIDE = re.compile(
    r"\bDESIGN\.md|\breference/[\w-]+\.md|\.\./shared\b|\.realserver/|(?<![\w/])fixtures/real\b"
)
"""The team's design notes, references, H200 recipes and captures as they were before
docs/design.md, docs/interfaces.md, ci/h200/ and tests/fixtures/: beside the checkout, where a
clone cannot follow them."""


def _has_section(doc: Path, number: str) -> bool:
    """Whether `doc` has a heading numbered `number` ("## 2. How data flows", "### 2.2 …")."""
    return re.search(rf"^#+ {re.escape(number)}\.? ", _text(doc), flags=re.MULTILINE) is not None


def _doc_references() -> list[tuple[str, str, str, str]]:
    """(citing file, document, anchor, section) of each `docs/<file>.md[#anchor| §N]`."""
    return [
        (str(path.relative_to(ROOT)), *found)
        for path in CITING
        for found in DOC_REFERENCE.findall(_text(path))
    ]


def test_every_cited_document_and_section_exists() -> None:
    """`docs/design.md §4`, `docs/interfaces.md §2.2`, `docs/usage.md#specmon-web`: the file,
    its numbered section or its heading exists. The code cited DESIGN.md and
    reference/sglang-interfaces.md, which are not in the repository."""
    references = _doc_references()
    assert any(section for *_, section in references)  # the pattern still finds § citations
    missing = []
    for citing, name, anchor, section in references:
        doc = ROOT / "docs" / name
        if not doc.exists():
            missing.append(f"{citing}: docs/{name}")
        elif anchor and anchor not in _anchors(doc):
            missing.append(f"{citing}: docs/{name}#{anchor}")
        elif section and not _has_section(doc, section):
            missing.append(f"{citing}: docs/{name} §{section}")
    assert not missing, missing


def test_no_pointers_to_notes_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    cited = [
        f"{path.relative_to(ROOT)}: {found}"
        for path in CITING
        if path != this
        for found in OUTSIDE.findall(_text(path))
    ]
    assert not cited, cited


TRACKER = re.compile(r"\b[Ii]ssues? \d+\b")
"""`issue 36`: specmon's own issue tracker, which a clone does not have (another project's is
cited by its name and number: "vLLM issue #49548")."""


def test_no_pointers_to_the_issue_tracker() -> None:
    """The code and the documents say the reason, not the issue it came from; left out: the
    tests, and docs/performance.md's diary of measurements, which name the issue each was for."""
    cited = [
        f"{path.relative_to(ROOT)}: {found}"
        for path in CITING
        if path.relative_to(ROOT).parts[0] != "tests" and path.name != "performance.md"
        for found in TRACKER.findall(_text(path))
    ]
    assert not cited, cited


CITED_TEST = re.compile(r"\btests/[\w/.*-]*\w(?:::\w+)?")
BARE_TEST = re.compile(r"`(test_\w+\.py)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_cited_tests_exist(doc: Path) -> None:
    """A test cited by path (`tests/session/test_live.py`, `tests/ui/`, `tests/x.py::test_y`) or by
    file name (`test_fault_cli.py`) exists: reliability.md cited tests/analysis/ for two that
    live in tests/session/."""
    text = _text(doc)
    for cited in CITED_TEST.findall(text):
        path, _, name = cited.partition("::")
        found = sorted(ROOT.glob(path))
        assert found, f"{doc.name}: {cited} does not exist"
        if name:
            assert re.search(rf"def {name}\b", _text(found[0])), f"{doc.name}: {cited}"
    for name in BARE_TEST.findall(text):
        assert any((ROOT / "tests").rglob(name)), f"{doc.name}: {name} does not exist"


CODE_PATH = re.compile(r"(?<![\w/.<-])((?:[A-Za-z_][\w.-]*/)+[\w-]+\.(?:py|sh|toml|tcss))\b")
OURS = {p.name for p in (*ROOT.iterdir(), *(ROOT / "specmon").iterdir()) if p.is_dir()}
"""The folders a cited path of ours starts from: the repository's and the package's (a path
under another project's tree, `vllm/v1/metrics/stats.py`, starts elsewhere)."""


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_cited_code_paths_exist(doc: Path) -> None:
    """A file of ours a document cites (`specmon/session/live.py`, `session/window.py`,
    `benchmarks/soak.py`) exists: reliability.md cited analysis/window.py and analysis/live.py
    after they had moved to session/."""
    for cited in CODE_PATH.findall(_text(doc)):
        if cited.split("/")[0] in OURS:
            assert (ROOT / cited).exists() or (ROOT / "specmon" / cited).exists(), (
                f"{doc.name}: {cited} does not exist"
            )


def _code_map() -> tuple[set[str], set[str]]:
    """The modules and the packages docs/design.md §3 names under specmon/, as paths: its
    block is a tree, two spaces a level, each line's names (`x.py`, `x/`, comma-separated)
    before a gap of two spaces or more."""
    section = _text(ROOT / "docs" / "design.md").split("## 3. Where code lives", 1)[1]
    block = section.split("\n## ", 1)[0]
    modules: set[str] = set()
    packages: set[str] = set()
    parents: list[str] = []
    for line in block.splitlines():
        if not line.startswith("    ") or not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" ")) - 4) // 2
        del parents[depth:]
        names = re.split(r" {2,}", line.strip(), maxsplit=1)[0].split(", ")
        paths = ["/".join([*parents, name]) for name in names]
        if len(names) == 1 and names[0].endswith("/"):
            parents.append(names[0].removesuffix("/"))
        for path in paths:
            if path.startswith("specmon/"):
                (packages if path.endswith("/") else modules).add(path.removesuffix("/"))
    return modules, packages


def test_the_code_map_names_every_module_and_only_those() -> None:
    """docs/design.md §3 names every module and package under specmon/, and nothing that is
    not there: the map had lost `backend_facts.py`, most of TensorRT-LLM and half of
    `analysis/` and `session/`."""
    mapped, mapped_packages = _code_map()
    files = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "specmon").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    packages = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "specmon").rglob("__init__.py")}
    unmapped = sorted(f for f in files - mapped if not f.endswith("/__init__.py"))
    assert not unmapped, f"modules missing from docs/design.md §3: {unmapped}"
    assert not mapped - files, f"docs/design.md §3 names modules not in the tree: {mapped - files}"
    assert mapped_packages == packages, mapped_packages ^ packages
    assert "specmon/session/server_session.py" in mapped  # the parser still reads the map


def test_the_layout_table_names_every_package_and_root_module() -> None:
    """docs/development.md's "Layout and layers" table has a row for every package and
    module at the root of specmon/, and names nothing that is not there (a row's bare names,
    `config.py`, are beside its first path's)."""
    text = _text(ROOT / "docs" / "development.md")
    named = set()
    for row in re.findall(r"^\| (`specmon/[^|]*)\|", text, flags=re.MULTILINE):
        first, *rest = re.findall(r"`([\w/.]+)`", row)
        parts = first.removeprefix("specmon/").split("/")
        named.add(parts[0] + ("/" if len(parts) > 1 else ""))
        if len(parts) == 1:  # a root module: the bare names beside it are root modules too
            named.update(name for name in rest if name.endswith(".py") and "/" not in name)
    root = {
        p.name + "/" if p.is_dir() else p.name
        for p in (ROOT / "specmon").iterdir()
        if (p / "__init__.py").exists() or p.suffix == ".py"
    } - {"__init__.py", "__main__.py"}
    assert root <= named, f"not in the layout table: {sorted(root - named)}"
    assert named <= root, f"in the layout table, not in specmon/: {sorted(named - root)}"


def test_lint_messages_point_at_docs_in_the_repository() -> None:
    """ruff's banned-api messages cite the layering rule by its heading in development.md."""
    text = _text(ROOT / "pyproject.toml")
    assert "docs/development.md (Layout and layers)" in text
    assert "## Layout and layers" in _text(ROOT / "docs" / "development.md")


def test_the_readme_simulators_by_hand_share_their_configuration() -> None:
    """The README's speculative simulator and its plain twin have one fingerprint, so the
    twin's baselines apply: without `--max-running-requests 48` they did not (the speculative
    one sets it, as SGLang does)."""
    commands = re.findall(r"`python -m specmon\.sim --port \d+([^`]*)`", _text(README))
    assert len(commands) == 2
    fingerprints = set()
    for flags in commands:
        config = config_from_args(flags.split())
        # Issue 38: without --enable-metrics (off, as on SGLang) `check` said metrics are off.
        assert config.enable_metrics, flags
        with SimThread(config) as sim:
            body = httpx.get(f"{sim.url}/server_info", timeout=10).json()
            assert httpx.get(f"{sim.url}/metrics", timeout=10).status_code == 200
        fingerprints.add(fingerprint(parse_server_info(body).args))
    assert len(fingerprints) == 1


def _bounds(number: str) -> tuple[float, float]:
    """The interval a printed number was rounded from."""
    decimals = len(number.partition(".")[2])
    half = 0.5 * 10**-decimals
    return float(number) - half, float(number) + half


def test_examples_obey_the_formulas() -> None:
    """decode tok/s = 1000 · accept / cycle ms; e2e ≤ decode; ms/token = 1000 / tok/s."""
    text = "\n".join(_text(doc) for doc in DOCS)
    figures = re.findall(r"decode ([\d.]+) tok/s[,| ]+accept ([\d.]+)[,| ]+cycle ([\d.]+) ms", text)
    assert len(figures) >= 2
    for decode, accept, cycle in figures:
        (a_low, a_high), (c_low, c_high) = _bounds(accept), _bounds(cycle)
        low, high = _bounds(decode)
        assert 1000 * a_low / c_high <= high and low <= 1000 * a_high / c_low, (decode, accept)
    run_line = r"(\d+) tokens in ([\d.]+)s = ([\d.]+) tok/s .*\| decode ([\d.]+) tok/s"
    runs = re.findall(run_line, text)
    assert runs
    for tokens, seconds, e2e, decode in runs:
        assert float(e2e) <= float(decode)
        assert abs(int(tokens) / float(seconds) - float(e2e)) <= 0.1
    per_token = re.findall(r"([\d.]+) tok/s \(([\d.]+) ms/token\)", text)
    assert per_token
    for tok_s, ms in per_token:
        assert round(1000 / float(tok_s), 1) == float(ms), (tok_s, ms)


def test_demo_described_as_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """README and the demo's --help give the simulator's numbers and what follows from them."""
    config = SimConfig()
    plain = 1000 / config.plain_step_ms
    spec = 1000 * config.accept_length / config.cycle_ms
    said = [
        f"{plain:.1f} tok/s",
        f"{config.cycle_ms:.1f} ms",
        f"{config.accept_length:.1f}",
        f"{spec:.1f} tok/s",
        f"+{100 * (spec / plain - 1):.0f}%",
        f"{config.cycle_ms / config.plain_step_ms:.2f}",
    ]
    readme = " ".join(_text(README).split())
    readme_demo = readme[readme.index("### `specmon demo`") :]
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    demo_help = " ".join(capsys.readouterr().out.split())
    for number in said:
        assert number in readme_demo and number in demo_help, number


def test_help_and_readme_name_every_server_and_the_default_address() -> None:
    help_text = " ".join(build_parser().format_help().split())  # argparse wraps lines anywhere
    readme = " ".join(_text(README).split())
    for text in (help_text, readme):
        for kind in FACTS.values():
            assert kind.display in text, kind.display
        assert f"{DEFAULT_HOST}:{DEFAULT_PORT}" in text


SHARED_GROUPS = ("live dashboard", "connection")
"""Option groups the README's usage block names as "[dashboard options]" or leaves to the text
below it (the connection options): only each command's own options must be listed."""
UNLISTED = {"-h", "--help", "--version", "--db", "--config"}


def _usage_entries() -> list[tuple[list[str], str]]:
    """(command words, text) of each `specmon …` entry of README's usage block, continuation
    lines joined: (["snapshots", "export"], "specmon snapshots export [--format …] …")."""
    block = _text(README).split("## Usage", 1)[1].split("```")[1]
    commands = {"bench", "check", "ab", "launch", "whatif", "snapshots", "exporter", "demo",
                "agent", "web", "record", "history", "replay"}  # fmt: skip
    entries: list[tuple[list[str], str]] = []
    for line in block.splitlines():
        if line.startswith("specmon"):
            words = line.split()[1:3]
            path = words[:1] if words and words[0] in commands else []
            if path == ["snapshots"]:
                path = words
            entries.append((path, line))
        elif line.startswith(" ") and entries:
            entries[-1] = (entries[-1][0], f"{entries[-1][1]} {line.strip()}")
    return entries


def _parser_of(path: list[str]) -> argparse.ArgumentParser:
    parser = build_parser()
    for word in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


@pytest.mark.parametrize("entry", _usage_entries(), ids=lambda e: " ".join(e[0]) or "dashboard")
def test_readme_usage_matches_each_commands_options(entry: tuple[list[str], str]) -> None:
    """Every option the usage block shows is the command's, and every option of the command's
    own (not the dashboard's or the connection's, which the text covers) is shown: `snapshots
    export` lacked --max-age and --offline, `ab` --warmup and --prompt."""
    path, text = entry
    parser = _parser_of(path)
    options = {o for a in parser._actions for o in a.option_strings}
    shown = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", text))
    assert shown <= options, f"not options of `specmon {' '.join(path)}`: {shown - options}"
    for group in parser._action_groups:
        if group.title is None or group.title.startswith(SHARED_GROUPS):
            continue
        for action in group._group_actions:
            names = set(action.option_strings) - UNLISTED
            if names and action.help != argparse.SUPPRESS and not names & shown:
                raise AssertionError(f"README's usage of {path} omits {action.option_strings}")
