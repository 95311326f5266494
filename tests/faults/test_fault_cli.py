"""The fault matrix against `bench` and `check`: the cause named in one line, the documented exit
code, nothing saved by a bench that failed, and a clean run once the fault clears."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_cases import CASES, FAST, IDS, TIMED_OUT, TIMEOUT_S, Case

from specmon.cli import main
from specmon.sim import EmittedRequest, SimThread
from specmon.storage.store import Store

TIMEOUTS = ("--connect-timeout", str(TIMEOUT_S), "--read-timeout", str(TIMEOUT_S))
BENCH = ("--runs", "2", "--warmup", "0", "--max-tokens", "12", *TIMEOUTS)


@pytest.fixture
def sim() -> Iterator[SimThread]:
    with SimThread(FAST) as thread:
        yield thread


def _stored(db: Path) -> int:
    with Store(db) as store:
        return len(store.list())


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("specmon: error")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bench(
    case: Case, sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    case.apply(sim.server.faults)
    code = main(["bench", sim.url, *BENCH, "--db", str(db)])
    err = capsys.readouterr().err
    if case.bench is None:
        assert code == 0, err
        assert _stored(db) == 1
    else:
        assert code == 1
        line = _error_line(err)
        assert re.search(case.bench, line), line
        assert line.endswith("(the bench did not complete: nothing saved)")
        assert _stored(db) == 0
    sim.server.faults.clear()  # and it recovers: the next bench saves
    assert main(["bench", sim.url, *BENCH, "--db", str(db)]) == 0
    capsys.readouterr()


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_check(
    case: Case, sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    case.apply(sim.server.faults)
    args = ["check", sim.url, "--db", empty_db, "--probe-tokens", "12", *TIMEOUTS]
    code = main(args)
    lines = capsys.readouterr().out.splitlines()
    expected_code, cause = case.check
    assert code == expected_code, lines
    if cause is not None:
        assert any(re.search(cause, line) for line in lines if line[0] in "!✗"), lines
    sim.server.faults.clear()
    assert main(args) == 0
    capsys.readouterr()


def test_bench_refused_and_unknown_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, not listening: refused
        port = s.getsockname()[1]
        code = main(["bench", f"127.0.0.1:{port}", *BENCH, "--db", str(tmp_path / "db")])
    assert code == 1
    assert "connection refused (nothing listening?)" in _error_line(capsys.readouterr().err)
    code = main(["bench", "nonexistent.invalid:80", *BENCH, "--db", str(tmp_path / "db")])
    assert code == 1
    assert "host name not found" in _error_line(capsys.readouterr().err)
    assert _stored(tmp_path / "db") == 0


@pytest.mark.slow
def test_restart_mid_bench_saves_nothing_of_the_old_server(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server restarts after the first run: counters reset, a new seed. Nothing of the
    broken bench is saved: it fails, or, refused as untrustworthy, is run again whole against
    the restarted server, saying so."""
    server = sim.server
    keep = server.record
    first_run = threading.Event()

    def record(rec: EmittedRequest) -> None:
        keep(rec)
        first_run.set()

    def restart_after_first_run() -> None:
        assert first_run.wait(30)
        sim.call(server.restart)

    server.record = record  # type: ignore[method-assign]
    helper = threading.Thread(target=restart_after_first_run)
    helper.start()
    db = tmp_path / "db"
    code = main(
        [
            "bench",
            sim.url,
            "--runs",
            "3",
            "--warmup",
            "0",
            "--max-tokens",
            "200",
            *TIMEOUTS,
            "--db",
            str(db),
        ]
    )
    helper.join()
    out, err = capsys.readouterr()
    if code == 0:  # seen as a restart (new launch, counters down): benched again, said so
        assert re.search(
            "restarted.*; benching it again|counters went down.*; benching it again", out
        ), out
        with Store(db) as store:
            [saved] = store.list()
        assert len(saved.runs) == 3
        return
    assert code == 1
    line = _error_line(err)
    # Which one depends on where the restart lands: between runs the next connect finds the port
    # closed for a moment, or is accepted by the closing server and then closed or never
    # answered; inside a run the stream drops.
    causes = "dropped mid-stream|no new token|cannot connect|refused"
    causes += "|the server closed the connection"
    causes += f"|{TIMED_OUT}"
    assert re.search(causes, line), line
    assert _stored(db) == 0
