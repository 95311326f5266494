"""specmon as a process: SIGINT, SIGTERM and SIGHUP during a bench (exit 130, one line, nothing
saved), also started as a shell starts `specmon … &` (SIGINT ignored) and as `nohup` does (SIGHUP
ignored: the command keeps it ignored); the process list (no API key in it); and two benches
writing one store at once."""

from __future__ import annotations

import asyncio
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from fault_cases import FAST

from specmon.sim import SimThread
from specmon.storage.store import Store

pytestmark = pytest.mark.slow  # specmon processes signalled mid-run

# Slow enough that a 150-token run lasts a while: the signal lands mid-bench.
SLOW = replace(FAST, cycle_ms=10.0, plain_step_ms=5.0)
INTERRUPTED = "specmon: interrupted: the bench did not complete: nothing saved"
KEY = "sk-specmon-SECRET-in-the-environment"


@pytest.fixture
def sim() -> Iterator[SimThread]:
    with SimThread(SLOW) as thread:
        yield thread


# Sets the signals named in argv[1] to ignored, then becomes `python -m specmon ARGS`: a
# disposition of "ignored" survives exec, as with a shell's `cmd &` (SIGINT) or `nohup` (SIGHUP).
# (Not preexec_fn: this process runs the simulator's thread.)
IGNORING = """
import os, signal, sys
for name in filter(None, sys.argv[1].split(",")):
    signal.signal(getattr(signal, name), signal.SIG_IGN)
os.execv(sys.executable, [sys.executable, "-m", "specmon", *sys.argv[2:]])
"""


_started: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _kill_leftovers() -> Iterator[None]:
    """A test that failed (a signal not obeyed) leaves no specmon running behind it."""
    yield
    while _started:
        proc = _started.pop()
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def specmon(*args: str, ignoring: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """`python -m specmon ARGS` with pipes, started with the signals named in `ignoring` ignored."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECMON_")}
    env["SPECMON_API_KEY"] = KEY  # sent to the server, never shown
    command = [sys.executable, "-c", IGNORING, ",".join(ignoring), *args]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    _started.append(proc)
    return proc


def signal_mask(pid: int, field: str) -> set[int]:
    """The signals in a /proc/PID/status mask ("SigIgn", "SigCgt")."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(next(line for line in status.splitlines() if line.startswith(field)).split()[1], 16)
    return {signum for signum in range(1, 65) if mask >> (signum - 1) & 1}


def wait_until_caught(proc: subprocess.Popen[str], signum: int, limit_s: float = 60.0) -> None:
    """Wait until the process has a handler for `signum` (so it is past Python's start-up)."""
    deadline = time.monotonic() + limit_s
    while signum not in signal_mask(proc.pid, "SigCgt"):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no handler for {signum} within {limit_s} s"
        time.sleep(0.01)  # polling for a condition, bounded above


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


@pytest.mark.parametrize(
    ("signum", "ignoring"),
    [
        (signal.SIGINT, ()),
        (signal.SIGTERM, ()),
        (signal.SIGHUP, ()),
        # Started in the background by a shell (`specmon bench … &`): SIGINT is ignored, and
        # SIGTERM used to be re-raised as that ignored SIGINT: the bench ran on and saved.
        (signal.SIGTERM, ("SIGINT",)),
        (signal.SIGHUP, ("SIGINT",)),
    ],
    ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGTERM-in-background", "SIGHUP-in-background"],
)
def test_signal_mid_bench(
    signum: int, ignoring: tuple[str, ...], sim: SimThread, tmp_path: Path
) -> None:
    db = tmp_path / "db"
    proc = specmon(
        "bench",
        sim.url,
        "--runs",
        "20",
        "--warmup",
        "0",
        "--max-tokens",
        "150",
        "--db",
        str(db),
        ignoring=ignoring,
    )
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
        procs = [
            specmon(
                "bench",
                sim.url,
                "--runs",
                "3",
                "--warmup",
                "0",
                "--max-tokens",
                "100",
                "--label",
                f"p{i}",
                "--db",
                db,
            )
            for i in range(2)
        ]
        results = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], results
    with Store(db) as store:
        assert sorted(s.label or "" for s in store.list()) == ["p0", "p1"]


def test_sigterm_stops_a_background_check(empty_db: str) -> None:
    """`specmon check … &` waiting on a hung server stops on SIGTERM, at once."""
    with SimThread(FAST) as sim:
        sim.server.faults.hang.add("*")
        proc = specmon(
            "check", sim.url, "--read-timeout", "600", "--db", empty_db, ignoring=("SIGINT",)
        )
        sim.call(lambda: asyncio.wait_for(sim.server.hung.wait(), 60))
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    said = "specmon: interrupted: while reading the server: 0 probes done, no verdict"
    assert err.strip() == said


def test_sigterm_stops_a_background_snapshots_command(tmp_path: Path) -> None:
    """No event loop here: `snapshots export -o FIFO` blocks opening a FIFO nobody reads."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    Store(tmp_path / "db").close()  # snapshots commands refuse a --db that names no store
    proc = specmon(
        "snapshots",
        "--db",
        str(tmp_path / "db"),
        "export",
        "--format",
        "md",
        "-o",
        str(fifo),
        ignoring=("SIGINT",),
    )
    wait_until_caught(proc, signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert err.strip() == "specmon: interrupted"


@pytest.fixture
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_agent_under_nohup_outlives_sighup_and_stops_on_sigterm(free_port: int) -> None:
    """`nohup specmon agent &`: SIGINT and SIGHUP ignored; the agent keeps SIGHUP ignored (a
    closed login shell must not take it down), and SIGTERM stops it."""
    proc = specmon(
        "agent", "--host", "127.0.0.1", "--port", str(free_port), ignoring=("SIGINT", "SIGHUP")
    )
    url = wait_for_line(proc, "specmon agent: serving").split()[-1]
    assert {signal.SIGINT, signal.SIGHUP} <= signal_mask(proc.pid, "SigIgn")
    proc.send_signal(signal.SIGHUP)  # discarded by the kernel: it is ignored
    assert httpx.get(url, timeout=10).status_code == 200
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert err.strip().endswith("specmon: interrupted")


def test_agent_stops_on_sighup_without_nohup(free_port: int) -> None:
    """Started by a shell in the background (SIGINT ignored), the agent goes with its terminal."""
    proc = specmon("agent", "--host", "127.0.0.1", "--port", str(free_port), ignoring=("SIGINT",))
    wait_for_line(proc, "specmon agent: serving")
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
