"""`specmon record`: headless recording of what the dashboard would see."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from specmon.cli import main
from specmon.cli.record import span
from specmon.session.recording import read_recording
from specmon.sim import SimConfig, SimThread

SECRET = "sk-record-cli-SECRET-77"


@pytest.mark.slow
@pytest.mark.parametrize("where", ["environment", "file"])
def test_record_writes_what_the_dashboard_would_see_without_the_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    out = tmp_path / "incident.jsonl"
    key: list[str] = []
    if where == "environment":
        monkeypatch.setenv("SPECMON_API_KEY", SECRET)
    else:
        (tmp_path / "key").write_text(SECRET)
        (tmp_path / "key").chmod(0o600)
        key = ["--api-key-file", str(tmp_path / "key")]
    with SimThread(SimConfig(api_key=SECRET, seed=5)) as sim:
        code = main(
            [
                "record",
                sim.url,
                "--out",
                str(out),
                "--duration",
                "1.2",
                "--interval",
                "0.2",
                "--no-probe",
                *key,
            ]
        )
    err = capsys.readouterr().err.splitlines()
    assert code == 0, err
    assert err[0] == f"specmon record: recording {sim.url} to {out}; Ctrl-C stops"
    assert err[-1].endswith(f"MB in {out}; replay it: specmon replay {out}")
    recording = read_recording(out)
    samples = [e.args[0] for e in recording.entries if e.kind == "sample"]
    assert len(samples) >= 3 and samples[-1].info is not None  # the key was accepted
    assert SECRET not in out.read_text()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["http://a:1", "--url", "http://b:2"],
            "give the server once: URL, --url or --host/--port",
        ),
        (
            ["--url", "http://a:1", "--url", "http://b:2"],
            "specmon record watches one server; record each in its own file",
        ),
    ],
)
def test_record_refuses_bad_targets_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], error: str
) -> None:
    assert main(["record", *args, "--out", str(tmp_path / "r.jsonl")]) == 2
    assert capsys.readouterr().err == f"specmon: error: {error}\n"


def test_durations_take_units() -> None:
    assert [span(t) for t in ("90", "90s", "10m", "1.5h")] == [90, 90, 600, 5400]
    for bad in ("", "0", "5x", "-3m", "m"):
        with pytest.raises(argparse.ArgumentTypeError, match="not a length of time"):
            span(bad)
