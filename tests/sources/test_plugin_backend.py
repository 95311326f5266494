"""A backend from a package of its own (`specmon.backends` entry point): detected and named on
`check --json` and `--once --json`, with no file of specmon edited; a broken plug-in is one line
and skipped. Each runs in a subprocess whose `sys.path` holds a temporary site directory with the
plug-in's dist-info (what `pip install` writes), so this process's metadata is untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import specmon
from specmon.backend_facts import BUILT_IN, GROUP, facts, find
from specmon.errors import SpecmonError, UnknownBackend
from specmon.sim import SimConfig, SimThread

FIXTURE = Path(__file__).parents[1] / "fixtures" / "plugin_backend"
FAST = SimConfig(plain_step_ms=1.0, cycle_ms=2.0, accept_length=2.1, ttft_ms=2.0, seed=5)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimThread]:
    with SimThread(FAST) as thread:
        yield thread


def _site(root: Path, entry_points: str) -> Path:
    """A site directory holding one installed distribution's metadata and entry points."""
    info = root / "specmon_toy_backend-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: specmon-toy-backend\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{entry_points}", encoding="utf-8")
    return root


def _specmon(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECMON_")}
    source = str(Path(specmon.__file__).parents[1])
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(FIXTURE), source])
    return subprocess.run(
        [sys.executable, "-m", "specmon", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_a_plugin_backend_is_detected_and_named_on_check_and_once(
    sim: SimThread, tmp_path: Path, empty_db: str
) -> None:
    site = _site(
        tmp_path / "site",
        "toyserve = specmon_toy_backend:PLUGIN\n"
        "broken = specmon_no_such_module:PLUGIN\n"
        "wrong = specmon_toy_backend:TOY\n",
    )
    check = _specmon(site, "check", sim.url, "--db", empty_db, "--json", "--probe-tokens", "40")
    texts = [finding["text"] for finding in json.loads(check.stdout)["findings"]]
    assert texts[0].startswith("reachable: ToyServe 0.5.23"), texts
    # Broken plug-ins: one line each, named, never a traceback; the others still load.
    assert "Traceback" not in check.stderr
    lines = check.stderr.splitlines()
    assert any("broken" in line and "not loaded" in line for line in lines), check.stderr
    assert any("wrong" in line and "not a BackendPlugin" in line for line in lines), check.stderr

    once = _specmon(
        site, "--once", "--json", "--url", sim.url, "--db", empty_db, "--probe-tokens", "40"
    )
    assert once.returncode == 0, once.stderr
    [server] = json.loads(once.stdout)["servers"]
    assert server["view"]["identity"]["title"] == "ToyServe 0.5.23"


@pytest.mark.slow
def test_without_the_plugin_the_same_server_is_the_built_in(
    sim: SimThread, tmp_path: Path, empty_db: str
) -> None:
    check = _specmon(tmp_path, "check", sim.url, "--db", empty_db, "--json", "--probe-tokens", "40")
    [first, *_] = json.loads(check.stdout)["findings"]
    assert first["text"].startswith(f"reachable: {BUILT_IN[0].facts.display} 0.5.23"), first
    assert check.stderr == ""


def test_an_unknown_backend_is_an_error_not_sglang() -> None:
    assert find("no-such-server") is None
    with pytest.raises(UnknownBackend, match="no-such-server") as caught:
        facts("no-such-server")
    assert isinstance(caught.value, SpecmonError)


def test_pyproject_registers_every_built_in_by_its_name() -> None:
    pyproject = tomllib.loads(
        (Path(specmon.__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    )
    points = pyproject["project"]["entry-points"][GROUP]
    import specmon.backend_facts as module

    registered = {name: getattr(module, value.split(":")[1]) for name, value in points.items()}
    assert registered == {plugin.name: plugin for plugin in BUILT_IN}


def test_built_ins_have_distinct_priorities() -> None:
    assert len({plugin.priority for plugin in BUILT_IN}) == len(BUILT_IN)


def test_a_record_of_a_backend_not_installed_here_reads_without_its_facts() -> None:
    """A replay or stored snapshot written with a plug-in this machine lacks: k is its steps,
    no no-op flag is claimed, no late speculation is assumed (`find`, not `facts`)."""
    from specmon.analysis.acceptance import draft_length
    from specmon.model import ServerInfo, SpecConfig
    from specmon.session.tracker import _revealed
    from specmon.whatif.advice import _no_op_flags

    spec = SpecConfig("EAGLE", num_steps=3, eagle_topk=1, num_draft_tokens=4)
    info = ServerInfo("gone", "1", "m", 1, 1, 1, spec, 1, False, None, True, {})
    assert draft_length(info) == 3
    assert _no_op_flags(info) == []
    assert _revealed(info, info) is False
