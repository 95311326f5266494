"""A server whose model name is an attack on the terminal (a pane title, a hyperlink, a
clear-screen, a bell, Rich markup) and that echoes the API key in it: nothing specmon prints,
stores or exports sends those bytes on or shows the key (`specmon.safe_text`; the dashboard's
side is tests/ui/test_escape_dashboard.py).

Only control characters are looked for, never the sanitiser's own output, so the same test
judges a specmon without one (it failed on main before `safe_text`: the review's finding)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hostile_text import CRAFTED, EVIL, KEY, MARKUP, raw_controls

from specmon.cli import main
from specmon.config import FleetTarget, MonitorConfig
from specmon.exporter.server import Exporter
from specmon.session.fleet import Fleet
from specmon.session.server_session import ServerSession
from specmon.sim import SimThread
from specmon.storage.store import Store
from specmon.target import ApiKey, Target

BENCH = ["--runs", "2", "--warmup", "0", "--max-tokens", "24"]


def _clean(text: str, where: object) -> None:
    assert not raw_controls(text), (where, text)
    assert KEY not in text, (where, text)


@pytest.fixture
def crafted() -> Iterator[SimThread]:
    with SimThread(CRAFTED) as sim:
        echoed = httpx.get(sim.url + "/server_info", headers={"Authorization": f"Bearer {KEY}"})
        assert "\\u001b]0;PWNED" in echoed.text and KEY in echoed.text  # it does send them
        yield sim


def test_check_prints_no_escape_sequence(crafted: SimThread) -> None:
    env = {**os.environ, "SPECMON_API_KEY": KEY}
    printed = []
    for extra in ([], ["--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "specmon", "check", crafted.url, "--probe-tokens", "24", *extra],
            capture_output=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr
        for stream in (done.stdout, done.stderr):
            assert b"\x1b" not in stream and b"\x07" not in stream and b"\xc2\x9b" not in stream
            _clean(stream.decode(), extra)
        printed.append(done.stdout.decode())
    assert "evil" in printed[0]  # the model is named, its escapes shown, not sent


def test_bench_store_and_exports_hold_no_escape_sequence(
    crafted: SimThread,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPECMON_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "specmon.db")
    assert main(["bench", crafted.url, *BENCH, "--db", db]) == 0
    bench_out = capsys.readouterr()
    _clean(bench_out.out + bench_out.err, "bench")
    assert "evil" in bench_out.out  # the model is named, its escapes shown, not sent
    outputs = _snapshot_outputs(db, capsys)
    for where, text in outputs.items():
        _clean(text, where)
    assert "evil" in outputs["show 1"] and MARKUP in outputs["show 1"]
    assert KEY.encode() not in Path(db).read_bytes()  # the key was never stored


def _snapshot_outputs(db: str, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """What `snapshots list/show/export` print and write of the store at `db`."""
    outputs: dict[str, str] = {}
    for args in (["list"], ["show", "1"], ["show", "1", "--json"], ["export"]):
        assert main(["snapshots", "--db", db, *args]) == 0, args
        out = capsys.readouterr()
        outputs[" ".join(args)] = out.out + out.err
    for fmt in ("md", "csv", "json"):
        assert main(["snapshots", "--db", db, "export", "-o", f"x.{fmt}"]) == 0
        capsys.readouterr()
        outputs[f"x.{fmt}"] = Path(f"x.{fmt}").read_text(encoding="utf-8")
    return outputs


def test_an_old_store_holding_escapes_reads_back_clean(
    crafted: SimThread,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store written before the sanitiser: its raw text is put back with sqlite, as that
    specmon stored it, and every reading of it comes out clean."""
    monkeypatch.setenv("SPECMON_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "old.db")
    assert main(["bench", crafted.url, *BENCH, "--db", db, "--label", "old"]) == 0
    capsys.readouterr()
    with sqlite3.connect(db) as conn:
        (record,) = conn.execute("SELECT record FROM snapshots").fetchone()
        data = json.loads(record)
        server = data["server"]
        server.update(model=EVIL, version=EVIL)
        server["speculative"]["algorithm"] = "EAGLE3" + EVIL
        server["args"][EVIL] = [EVIL]
        data.update(label=EVIL)
        conn.execute("UPDATE snapshots SET record = ?", (json.dumps(data),))
    with Store(db) as store:
        assert raw_controls(json.dumps(store.list()[0].server.args, ensure_ascii=False)) == []
    for where, text in _snapshot_outputs(db, capsys).items():
        assert not raw_controls(text), (where, text)


def test_the_exporter_labels_hold_no_escape_sequence(crafted: SimThread, tmp_path: Path) -> None:
    config = MonitorConfig(url="http://unused", interval=0.2, probe_every=0.3, probe_tokens=24)
    target = Target(crafted.url, ApiKey(KEY, "test"))
    with Store(tmp_path / "exporter.db") as store:
        session = ServerSession.of_target(FleetTarget(crafted.url), target, config, store)
        text = asyncio.run(_scrape(Fleet([session]), session))
    _clean(text, "/metrics")
    (info,) = [line for line in text.splitlines() if line.startswith("specmon_target_info{")]
    assert "evil" in info and MARKUP in info


async def _scrape(fleet: Fleet, session: ServerSession) -> str:
    exporter = Exporter(fleet, "127.0.0.1", 0)
    await exporter.start()
    task = asyncio.create_task(fleet.run())
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while session.live.server.info is None:
            assert loop.time() < deadline, "no server info"
            await asyncio.sleep(0.02)
        async with httpx.AsyncClient(base_url=exporter.url, timeout=10) as client:
            return (await client.get("/metrics")).text
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await exporter.stop()
