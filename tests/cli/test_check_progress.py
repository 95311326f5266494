"""`check`'s progress on stderr as it goes (a terminal's default, or --progress): reachable or
not, each probe as "probe N/M" (M the most the check can take), the verdict as it was reached in
the report's words; nothing extra on stdout; Ctrl-C mid-probe saying what was done."""

from __future__ import annotations

import json
import os
import pty
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from specmon.cli import main
from specmon.cli.check_progress import CheckProgress
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
    # No baseline: the first probe, and up to 3 in all to judge the gap to the traffic.
    assert "specmon: probe 1/3: 60 tokens …" in lines
    assert any(line.startswith("specmon: probe 1/3: 60 tokens, TTFT") for line in lines)
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
    # The rule's cap: 10 pairs at most, within the 30 s budget.
    first = rf"specmon: baseline probe 1/10 \({re.escape(plain.url)}, \d+ s of the budget left\) …"
    assert any(re.fullmatch(first, line) for line in lines), lines
    budget = r"specmon: probe 2/10: 60 tokens \(\d+ s of the budget left\) …"
    assert any(re.fullmatch(budget, line) for line in lines), lines
    pairs = len(body["baseline_probes"])
    said = [line for line in lines if re.match(r"specmon: baseline probe \d+/10: \d+ tok", line)]
    assert len(said) == pairs >= 3
    verdict = [f["text"] for f in body["findings"] if "speedup" in f["text"]]
    _said_as_the_report(lines[-2], f"{pairs} pairs", verdict[-1])
    assert lines[-1] == f"specmon: done: {len(body['probes'])} probes and {pairs} baseline probes"


def _said_as_the_report(line: str, after: str, finding: str) -> None:
    """The progress's verdict line has the report's words and figures: the speedup with its
    interval and the verdict, after as many probes (or pairs)."""
    said = re.fullmatch(rf"specmon: verdict after {after}: (.+?) ([+-][\d.]+% \[.+\])", line)
    assert said, line
    verdict, speedup = said.groups()
    assert f"speedup {speedup} (" in finding, (line, finding)
    assert f" — {verdict} after {after} in " in finding, (line, finding)


@pytest.mark.slow
def test_stored_baseline_progress_counts_to_the_cap_and_says_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    with SimThread(FAST) as live, SimThread(replace(FAST, speculative_algorithm=None)) as plain:
        assert main(["bench", plain.url, "--runs", "3", "--max-tokens", "60", "--db", db]) == 0
        capsys.readouterr()
        assert main(["check", live.url, "--db", db, "--no-interleave", "--progress"]) in (0, 1)
        shown = capsys.readouterr()
    lines = shown.err.splitlines()
    # A baseline of the protocol: the first probe may be followed by up to 9 more.
    assert "specmon: probe 1/10: 60 tokens …" in lines
    budget = r"specmon: probe 2/10: 60 tokens \(\d+ s of the budget left\) …"
    assert any(re.fullmatch(budget, line) for line in lines), lines
    probes = sum(bool(re.match(r"specmon: probe \d+/\d+: 60 tokens,", line)) for line in lines)
    finding = next(line for line in shown.out.splitlines() if ", speedup " in line)
    assert finding[2:].startswith("vs baseline #1 ("), finding
    # Every probe to the verdict was counted against the cap, the most the rule allows.
    assert f"specmon: probe {probes}/10: 60 tokens" in shown.err
    _said_as_the_report(lines[-2], f"{probes} probes", finding)
    assert lines[-1] == f"specmon: done: {probes} probes"


@pytest.mark.slow
def test_plain_server_progress_says_one_probe(
    empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SimThread(replace(FAST, speculative_algorithm=None)) as plain:
        argv = ["check", plain.url, "--db", empty_db, "--probe-tokens", "60", "--progress"]
        assert main(argv) == 0
    lines = capsys.readouterr().err.replace(plain.url, "URL").splitlines()
    assert lines[:3] == [
        "specmon: reading URL",
        "specmon: reachable: SGLang 0.5.23 serving meta-llama/Llama-3.3-70B-Instruct — speculation "
        "off: one probe, no speedup to judge",
        "specmon: probe 1/1: 60 tokens …",
    ]
    assert lines[3].startswith("specmon: probe 1/1: 60 tokens, TTFT")
    assert lines[4:] == ["specmon: done: 1 probe"]


def test_unreachable_server_progress_says_why(
    empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        assert main(["check", f"127.0.0.1:{port}", "--db", empty_db, "--progress"]) == 2
    url = f"http://127.0.0.1:{port}"
    assert capsys.readouterr().err.splitlines() == [
        f"specmon: reading {url}",
        f"specmon: cannot check: {url}/server_info: connection refused (nothing listening?)",
        "specmon: done: 0 probes",
    ]


@pytest.mark.slow
def test_server_that_never_answers_progress_says_so(
    empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SimThread(FAST) as sim:
        sim.server.faults.hang.add("*")
        argv = ["check", sim.url, "--db", empty_db, "--read-timeout", "0.3", "--progress"]
        assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[1:] == [
        f"specmon: cannot check: {sim.url}/server_info: connected, but no answer within the "
        "read timeout",
        "specmon: done: 0 probes",
    ]


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
            _read_until(primary, "specmon: probe 1/3: 4000 tokens …", seen)
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


def test_an_interrupt_after_the_verdict_says_the_verdict() -> None:
    """Ctrl-C while the traffic's or the categories' probes run: the verdict was reached."""
    progress = CheckProgress(show=False)
    progress.probes, progress.phase = 4, "during probe 5"
    progress.concluded("verdict after 3 probes: winning +21.4% [+12.0%, +31.9%]")
    assert progress.interrupted() == (
        "during probe 5: 4 probes done, verdict after 3 probes: winning +21.4% [+12.0%, +31.9%]"
    )
