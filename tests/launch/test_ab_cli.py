"""`specmon ab` as a user runs it: the JSON report and saved snapshots, Ctrl-C at any point."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from ab_helpers import free_port

from specmon.storage.store import Store

pytestmark = pytest.mark.slow  # `specmon ab` as a process, launching simulator processes

SIM = [sys.executable, "-m", "specmon.sim", "--plain-step-ms", "6", "--cycle-ms", "9",
       "--ttft-ms", "5", "--speculative-algorithm", "NGRAM",
       "--speculative-num-draft-tokens", "4", "--accept-length", "2.5"]  # fmt: skip


def ab(db: Path, *options: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "specmon",
        "ab",
        "--db",
        str(db),
        "--runs",
        "2",
        "--max-tokens",
        "32",
        *options,
        "--",
        *SIM,
        "--port",
        str(free_port()),
    ]


def test_json_report_and_every_bench_saved(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    out = subprocess.run(
        ab(db, "--json", "--rounds", "1", "--concurrency", "1,2"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["server"] == "sim"
    assert report["baseline_command"].endswith(
        "--max-running-requests 48 --speculative-algorithm none"
    )
    assert "--speculative-algorithm NGRAM" in report["speculative_command"]
    (only,) = report["configs"]
    assert only["config"] is None
    assert [lv["concurrency"] for lv in only["levels"]] == [1, 2]
    assert set(only["crossover"]) == {"pays_up_to", "stops_at", "verdict", "exceptions"}
    for lv in only["levels"]:
        assert lv["valid"] is True
        assert lv["comparison"]["verdict"] in ("winning", "losing", "within noise")
        assert lv["comparison"]["speedup"]["level"] == 0.95
    assert report["best"] == []
    assert "Crossover:" in out.stderr  # the human output goes to stderr with --json
    # One round: the interval cannot hold the variation between launches, and says so.
    assert "one round: the 95% intervals hold the runs' noise only" in out.stderr
    assert "(tentative: fewer than 3 rounds; --rounds 3 or more to confirm)" in out.stderr
    for lv in only["levels"]:
        assert len(lv["round_spread"]["speedups"]) == 1
        assert lv["round_spread"]["tentative"] is lv["comparison"]["tentative"] is True
    with Store(db) as store:
        assert len(store.list()) == len(report["snapshot_ids"]) == 4


def test_export_pairs_each_round_with_its_own_baseline(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    out = subprocess.run(
        ab(db, "--rounds", "2"), capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    export = subprocess.run(
        [
            sys.executable,
            "-m",
            "specmon",
            "snapshots",
            "export",
            "--format",
            "json",
            "--db",
            str(db),
            "--offline",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rows = {row["id"]: row for row in json.loads(export.stdout)["rows"]}
    # Saved in the order they ran: round 1's baseline and speculative bench, then round 2's.
    assert [rows[i]["speculative"] for i in (1, 2, 3, 4)] == [False, True, False, True]
    assert (rows[2]["baseline_id"], rows[4]["baseline_id"]) == (1, 3)
    assert rows[2]["baseline_valid"] is rows[4]["baseline_valid"] is True


def test_a_sweep_from_the_command_line(tmp_path: Path) -> None:
    out = subprocess.run(
        ab(tmp_path / "s.db", "--json", "--rounds", "1", "--sweep", "draft-tokens=1,3,4"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert [c["config"] for c in report["configs"]] == ["draft-tokens=3", "draft-tokens=4"]
    assert report["skipped"][0].startswith("draft-tokens=1: ")
    assert [b["concurrency"] for b in report["best"]] == [1]
    assert report["best"][0]["config"] in ("draft-tokens=3", "draft-tokens=4")
    assert "Best configuration per concurrency:" in out.stderr
    assert len(report["snapshot_ids"]) == 3  # one baseline, two configurations


def test_the_readmes_sweep_of_a_chains_draft_length(tmp_path: Path) -> None:
    # EAGLE3 with topk 1 and --accept-length 2.1: every draft length runs (the steps set to
    # match, the simulator's accept length clamped to 2 tokens at 2 draft tokens).
    chain = [sys.executable, "-m", "specmon.sim", "--plain-step-ms", "6", "--cycle-ms", "9",
             "--ttft-ms", "5", "--speculative-algorithm", "EAGLE3", "--speculative-num-steps",
             "2", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "3",
             "--accept-length", "2.1", "--port", str(free_port())]  # fmt: skip
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "specmon",
            "ab",
            "--db",
            str(tmp_path / "s.db"),
            "--runs",
            "2",
            "--max-tokens",
            "32",
            "--json",
            "--rounds",
            "1",
            "--sweep",
            "draft-tokens=2,4",
            "--",
            *chain,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["skipped"] == []
    configs = [c["config"] for c in report["configs"]]
    assert configs == ["draft-tokens=2 steps=1", "draft-tokens=4 steps=3"]
    short = report["configs"][0]["levels"][0]["speculative"]["accept_length"]
    assert 1.8 < short <= 2.0  # at most 2 tokens per step with 2 draft tokens


def test_launch_refuses_a_taken_port_and_starts_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "specmon",
                "launch",
                "--db",
                str(tmp_path / "s.db"),
                "--",
                *SIM,
                "--port",
                port,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert out.returncode == 1
    assert f"specmon: error: port {port} on 127.0.0.1 is taken" in out.stderr
    assert "Traceback" not in out.stderr


def test_ctrl_c_while_a_server_runs_saves_nothing_and_stops_it(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    proc = subprocess.Popen(
        ab(db, "--rounds", "2", "--runs", "50"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    servers: list[psutil.Process] = []
    for line in proc.stdout:  # until the first timed run: a server up, a bench going on
        if line.startswith("baseline ×1"):
            servers = psutil.Process(proc.pid).children()
            break
    assert servers, "no server was seen running"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted: the A/B did not complete: nothing saved" in err
    assert not any(s.is_running() and s.status() != psutil.STATUS_ZOMBIE for s in servers)
    with Store(db) as store:
        assert store.list() == []
