"""specmon as a process: SIGINT, SIGTERM and SIGHUP during a bench (exit 130, one line, nothing
saved), the process list (no API key in it), and two benches writing one store at once."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fault_cases import FAST

from specmon.sim import SimThread
from specmon.store import Store

# Slow enough that a 150-token run lasts a while: the signal lands mid-bench.
SLOW = replace(FAST, cycle_ms=10.0, plain_step_ms=5.0)
INTERRUPTED = "specmon: interrupted: the bench did not complete: nothing saved"
KEY = "sk-specmon-SECRET-in-the-environment"


@pytest.fixture
def sim() -> Iterator[SimThread]:
    with SimThread(SLOW) as thread:
        yield thread


def specmon(*args: str) -> subprocess.Popen[str]:
    """`python -m specmon ARGS` with pipes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECMON_")}
    env["SPECMON_API_KEY"] = KEY  # sent to the server, never shown
    return subprocess.Popen([sys.executable, "-m", "specmon", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip


def wait_for_line(proc: subprocess.Popen[str], prefix: str, limit_s: float = 60.0) -> str:
    """Read the process's stdout until a line starts with `prefix` (fails after `limit_s`)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + limit_s
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=deadline - time.monotonic()):
                line = proc.stdout.readline()
                assert line, f"specmon exited: {proc.wait()} {proc.stderr.read()}"  # type: ignore[union-attr]
                if line.startswith(prefix):
                    return line
    raise AssertionError(f"no line starting {prefix!r} within {limit_s} s")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])  # fmt: skip
def test_signal_mid_bench(signum: int, sim: SimThread, tmp_path: Path) -> None:
    db = tmp_path / "db"
    proc = specmon("bench", sim.url, "--runs", "20", "--warmup", "0", "--max-tokens", "150",
                   "--db", str(db))  # fmt: skip
    wait_for_line(proc, "Run 1/20")
    cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    assert b"bench" in cmdline and KEY.encode() not in cmdline  # what `ps` shows everyone
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.strip() == INTERRUPTED
    assert KEY not in out
    with Store(db) as store:
        assert store.list() == []


def test_two_benches_on_one_store(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    with SimThread(FAST) as sim:
        procs = [specmon("bench", sim.url, "--runs", "3", "--warmup", "0", "--max-tokens",
                         "100", "--label", f"p{i}", "--db", db) for i in range(2)]  # fmt: skip
        results = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], results
    with Store(db) as store:
        assert sorted(s.label or "" for s in store.list()) == ["p0", "p1"]
