"""`check`'s progress on stderr as it goes (a terminal's default, or --progress), nothing extra on
stdout, and Ctrl-C mid-probe saying what was done."""

from __future__ import annotations

import json
import os
import pty
import re
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from specmon.cli import main
from specmon.cli.common import EXIT_INTERRUPTED
from specmon.sim import SimConfig, SimThread

FAST = SimConfig(plain_step_ms=4.0, cycle_ms=8.0, accept_length=2.1, ttft_ms=10.0, seed=3)
# A probe of 4000 tokens at 30 ms a cycle lasts about a minute: SIGINT lands inside it.
SLOW = replace(FAST, cycle_ms=30.0, plain_step_ms=15.0)
TOKENS = ("--probe-tokens", "4000")


def _check(capsys: pytest.CaptureFixture[str], db: str, *more: str) -> pytest.CaptureResult[str]:
    """`specmon check` of a fresh simulator (its traffic not the earlier check's probes)."""
    with SimThread(FAST) as sim:
        assert main(["check", sim.url, "--db", db, "--probe-tokens", "60", *more]) == 0
        shown = capsys.readouterr()
        return shown._replace(err=shown.err.replace(sim.url, "URL"))


@pytest.mark.slow
def test_progress_goes_to_stderr_and_stdout_is_unchanged(
    empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = _check(capsys, empty_db, "--progress")
    lines = shown.err.splitlines()
    assert lines[0] == "specmon: reading URL"
    assert lines[1].startswith("specmon: reachable: SGLang 0.5.23")
    assert lines[2].startswith("specmon: baseline: ")
    assert "specmon: probe 1: 60 tokens …" in lines
    assert any(line.startswith("specmon: probe 1: 60 tokens, TTFT") for line in lines)
    # Not a terminal (capsys) and no --progress: stderr has none of it; stdout has the same lines.
    quiet = _check(capsys, empty_db)
    assert "specmon: probe" not in quiet.err
    assert [line[:12] for line in quiet.out.splitlines()] == [
        line[:12] for line in shown.out.splitlines()
    ]
    assert "specmon:" not in shown.out
    assert lines[-1] == "specmon: done: 1 probe"


@pytest.mark.slow
def test_interleaved_progress_says_each_baseline_probe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    spec = SimConfig(plain_step_ms=4.0, cycle_ms=6.4, accept_length=2.0, ttft_ms=5.0, seed=11)
    with SimThread(spec) as live, SimThread(replace(spec, speculative_algorithm=None)) as plain:
        assert main(["bench", plain.url, "--runs", "3", "--max-tokens", "60", "--db", db]) == 0
        capsys.readouterr()
        assert main(["check", live.url, "--db", db, "--json", "--progress"]) == 0
        shown = capsys.readouterr()
    body = json.loads(shown.out)  # stdout: the JSON alone
    lines = shown.err.splitlines()
    assert f"specmon: baseline: #1 ({plain.url})" in lines
    assert f"specmon: baseline probe 1 ({plain.url}) …" in lines
    pairs = len(body["baseline_probes"])
    said = [line for line in lines if re.match(r"specmon: baseline probe \d+: \d+ tokens,", line)]
    assert len(said) == pairs >= 3
    assert lines[-1] == f"specmon: done: {len(body['probes'])} probes and {pairs} baseline probes"


def _read_until(fd: int, pattern: str, seen: list[str], limit_s: float = 120.0) -> None:
    """Read the terminal's output into `seen` until `pattern` appears (fails after `limit_s`)."""
    deadline = time.monotonic() + limit_s
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while pattern not in "".join(seen):
            assert time.monotonic() < deadline, f"no {pattern!r} within {limit_s} s: {seen}"
            if selector.select(timeout=deadline - time.monotonic()):
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # the process ended: the terminal is closed
                    chunk = b""
                assert chunk, f"specmon ended before {pattern!r}: {seen}"
                seen.append(chunk.decode(errors="replace"))


@pytest.mark.slow
def test_ctrl_c_mid_probe_says_what_was_done(empty_db: str) -> None:
    """stderr a terminal: progress by default; SIGINT once probe 1 has started."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECMON_")}
    with SimThread(SLOW) as slow:
        primary, secondary = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "specmon", "check", slow.url, "--db", empty_db, *TOKENS],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=secondary,
            env=env,
        )
        os.close(secondary)
        try:
            seen: list[str] = []
            _read_until(primary, "specmon: probe 1: 4000 tokens …", seen)
            proc.send_signal(signal.SIGINT)
            _read_until(primary, "no verdict", seen)
            assert proc.wait() == EXIT_INTERRUPTED
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
            os.close(primary)
    said = "".join(seen).replace("\r", "")
    assert re.search(r"specmon: interrupted: during probe 1: 0 probes done, no verdict", said), said
