"""`specmon history URL`: the recorded figures as a table or JSON, marks and drift; a bad
--since is one line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from specmon.cli import main
from specmon.cli.history import history_text
from specmon.history import Figure, Mark, MarkKind, Point
from specmon.storage import history_store
from specmon.storage.store import Store
from tests.analysis.test_drift import series

URL = "http://10.1.230.174:8000"
RESTARTED = "server restarted: its counters went down"


def _store_with_a_declining_day(path: Path, now: float) -> None:
    """Six hours of a probe's accept length declining 3.07 → 2.8, a server tok/s reading a
    minute, and a restart seven hours ago (before the decline: it does not cut it)."""
    readings = series(6, 3.07, 2.8, noise=0.05, seed=7)
    shift = now - 60 - readings[-1].at
    with Store(path) as store:
        history_store.append(
            store,
            [Point(URL, None, r.at + shift, Figure.ACCEPT, r.value) for r in readings]
            + [Point(URL, None, now - s, Figure.DECODE, 70.0) for s in range(60, 6 * 3600, 60)],
            [Mark(URL, now - 7 * 3600, MarkKind.RESTART, RESTARTED)],
        )


def test_the_table_shows_hourly_means_the_marks_and_the_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    now = time.time()
    _store_with_a_declining_day(db, now)
    assert main(["history", "10.1.230.174:8000", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"History of {URL} from ") and lines[0].endswith("means per 1 h")
    assert "server tok/s" in lines[1] and "accept (probe)" in lines[1]
    rows = [line for line in lines[2:] if line[:2] == "20" and "restart" not in line]
    assert len(rows) in (6, 7)  # six hours of readings, the first maybe split between two hours
    assert rows[-1].split()[2] == "70.0"  # server tok/s
    assert any(f"restart: {RESTARTED}" in line for line in lines)
    assert lines[-1].startswith("drift: accept length (probe) 3.0")


def test_json_holds_every_reading_the_marks_and_the_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    now = time.time()
    _store_with_a_declining_day(db, now)
    assert main(["history", URL, "--since", "2h", "--json", "--db", str(db)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == 1 and doc["url"] == URL
    assert doc["until"] - doc["since"] == pytest.approx(7200)
    accept = doc["figures"]["accept_length"]
    assert accept and all(doc["since"] <= r["at"] < doc["until"] for r in accept)
    assert set(accept[0]) == {"at", "span", "value", "low", "high", "count", "lifetime"}
    assert doc["marks"] == []  # the restart was 7 h ago
    assert doc["drift"] == []  # two hours: too short a span to judge (and only its end)
    assert main(["history", URL, "--since", "1d", "--json", "--db", str(db)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [m["kind"] for m in doc["marks"]] == ["restart"]
    assert [d["figure"] for d in doc["drift"]] == ["accept_length"]
    assert doc["drift"][0]["change"] < -0.05


def test_a_span_without_readings_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    now = time.time()
    _store_with_a_declining_day(db, now - 86400)  # a day older than the span asked for
    assert main(["history", URL, "--since", "30m", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("no readings in this span (the history begins ")
    assert lines[3] == "no drift: no acceptance or probe figures to judge"


def test_a_server_without_history_names_those_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    _store_with_a_declining_day(db, time.time())
    assert main(["history", "other:1", "--db", str(db)]) == 0
    assert capsys.readouterr().out == f"No history of http://other:1 in {db}; recorded: {URL}\n"


@pytest.mark.parametrize("since", ["24", "yesterday", "-1h", "0h", "1w"])
def test_a_bad_since_is_one_line(since: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["history", URL, f"--since={since}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert (
        f"argument --since: not a span: {since!r} (a number and s, m, h or d: 30m, 24h, 7d)\n"
        in err
    )


def test_three_minutes_are_labelled_from_their_first_reading_and_too_little_to_judge(
    tmp_path: Path,
) -> None:
    """Issue 38: readings of 07:01–07:04 showed as `from 06:04` (the 24 h window's cut) and
    `no drift … (judged over 2 h or more)` after 3 minutes."""
    now = 1_796_450_640.0  # a minute's start, so the labels below do not depend on seconds
    first = now - 180
    points = [Point(URL, None, first + s, f, 2.1) for s in range(0, 181, 10)
              for f in (Figure.ACCEPT, Figure.DECODE)]  # fmt: skip
    with Store(tmp_path / "db") as store:
        history_store.append(store, points, [])
        lines = history_text(store, URL, now - 86400, now + 1)
    rows = [line for line in lines[2:] if line[:2] == "20"]
    assert [row[:16] for row in rows] == [time.strftime("%Y-%m-%d %H:%M", time.localtime(first))]
    assert lines[-1] == (
        "too little history to judge drift: 3 min of this server lifetime recorded, "
        "2.0 h or more needed"
    )
