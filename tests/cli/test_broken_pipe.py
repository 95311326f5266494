"""Output into a pipe whose reader went away (`specmon snapshots compare 1 2 | head -4`): exit 141,
as for a program SIGPIPE kills, and no BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from specmon.cli import main
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store

pytestmark = pytest.mark.slow  # a specmon process a test

FAST = SimConfig(plain_step_ms=1.0, cycle_ms=2.0, accept_length=2.1, ttft_ms=2.0, seed=11)
BENCH = ("--runs", "2", "--warmup", "0", "--max-tokens", "20")


@pytest.fixture(scope="module")
def sim() -> Iterator[SimThread]:
    with SimThread(FAST) as thread:
        yield thread


@pytest.fixture(scope="module")
def db(sim: SimThread, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding a baseline (snapshot 1) and a speculative run (snapshot 2)."""
    path = tmp_path_factory.mktemp("store") / "db"
    with SimThread(replace(FAST, speculative_algorithm=None)) as plain:
        assert main(["bench", plain.url, *BENCH, "--db", str(path)]) == 0
    assert main(["bench", sim.url, *BENCH, "--db", str(path)]) == 0
    return path


def _into_closed_pipe(*args: str) -> tuple[int, str]:
    """Run `python -m specmon ARGS` with stdout a pipe whose reader has gone: every write fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECMON_")}
    with subprocess.Popen(
        [sys.executable, "-m", "specmon", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader goes before anything is written: no race
        err = proc.stderr.read()
        return proc.wait(timeout=60), err


@pytest.mark.parametrize(
    "args",
    [
        ("snapshots", "list"),
        ("snapshots", "show", "2"),
        ("snapshots", "show", "2", "--json"),
        ("snapshots", "compare", "1", "2"),
        ("snapshots", "export", "--format", "csv"),
    ],
    ids=" ".join,
)
def test_snapshots_into_a_closed_pipe(args: tuple[str, ...], db: Path) -> None:
    code, err = _into_closed_pipe(*args, "--db", str(db))
    assert (code, err) == (141, "")


def test_check_into_a_closed_pipe(sim: SimThread, db: Path) -> None:
    code, err = _into_closed_pipe("check", sim.url, "--probe-tokens", "20", "--db", str(db))
    assert (code, err) == (141, "")


def test_bench_into_a_closed_pipe_saves_nothing(sim: SimThread, tmp_path: Path) -> None:
    """Its output cut short, a bench is not complete: like an interrupted one, it saves nothing."""
    code, err = _into_closed_pipe("bench", sim.url, *BENCH, "--db", str(tmp_path / "db"))
    assert (code, err) == (141, "")
    with Store(tmp_path / "db") as store:
        assert store.list() == []
