"""Every surface against a hostile server (issue 36): `check --json`, `--once --json`, `bench`,
`snapshots list/show`, `record` → replay, and the exporter (two targets, one hostile, one good;
`--multi-target`'s `/probe` of each). Whatever the server sends: the documented exit code, no
traceback, one-line messages, every number in JSON finite or null, and the good target's
figures kept.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hostile.checks import finite
from hostile.server import CASES, FAST, IDS, Case, HostileThread

from specmon.cli import main
from specmon.config import MonitorConfig
from specmon.session.recording import read_recording
from specmon.session.replay import ReplayFeed, replay_session
from specmon.session.view_json import view_to_dict
from specmon.sim import SimThread
from specmon.storage.store import Store

pytestmark = pytest.mark.slow  # ~0.5–3 s a case: a server, a command, a subprocess

TIMEOUTS = ("--connect-timeout", "1", "--read-timeout", "1")
BENCH = ("--runs", "2", "--warmup", "0", "--max-tokens", "12", *TIMEOUTS)
CHECK_EXITS = {0, 1, 2}
"""docs/usage.md: healthy, degraded, unreachable (3, the store's, cannot happen here)."""
LIMIT_S = 60.0


@pytest.fixture(params=CASES, ids=IDS)
def hostile(request: pytest.FixtureRequest) -> Iterator[tuple[Case, HostileThread]]:
    case: Case = request.param
    with HostileThread(case) as server:
        yield case, server


def clean(out: str, err: str) -> None:
    """No traceback; at most one error line, and it is one line."""
    assert "Traceback" not in out + err, err
    errors = [line for line in err.splitlines() if line.startswith("specmon: error")]
    assert len(errors) <= 1, err


def one_line_texts(value: Any) -> None:
    """Every finding, message and event text in `value` is one line."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, v in item.items():
                if key in ("text", "message", "reason", "error", "detail") and isinstance(v, str):
                    assert "\n" not in v, v
                stack.append(v)
        elif isinstance(item, list):
            stack.extend(item)


def test_check(hostile: tuple[Case, HostileThread], capsys: pytest.CaptureFixture[str]) -> None:
    case, server = hostile
    code = main(["check", server.url, "--json", *TIMEOUTS])
    out, err = capsys.readouterr()
    clean(out, err)
    assert code in CHECK_EXITS
    if not case.reachable:
        assert code == 2
    report = json.loads(out)
    assert report["exit_code"] == code
    finite(report)
    one_line_texts(report)


@pytest.mark.slow
def test_once(hostile: tuple[Case, HostileThread], capsys: pytest.CaptureFixture[str]) -> None:
    _, server = hostile
    argv = ["--once", "--json", "--once-timeout", "8", "--url", server.url]
    code = main([*argv, "--probe-tokens", "16", *TIMEOUTS])
    out, err = capsys.readouterr()
    clean(out, err)
    assert code in (0, 1)
    frame = json.loads(out)
    finite(frame)
    one_line_texts(frame)


@pytest.mark.slow
def test_bench_then_snapshots(
    hostile: tuple[Case, HostileThread], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case, server = hostile
    db = str(tmp_path / "s.db")
    code = main(["bench", server.url, *BENCH, "--db", db])
    out, err = capsys.readouterr()
    clean(out, err)
    assert code in (0, 1)
    if not case.reachable:
        assert code == 1
    assert main(["snapshots", "--db", db, "list"]) == 0
    clean(*capsys.readouterr())
    with Store(Path(db)) as store:
        ids = [snapshot.id for snapshot in store.list()]
    assert (code == 0) == bool(ids)
    for snapshot_id in ids:
        assert main(["snapshots", "--db", db, "show", str(snapshot_id), "--json"]) == 0
        out, err = capsys.readouterr()
        clean(out, err)
        finite(json.loads(out))
        assert main(["snapshots", "--db", db, "show", str(snapshot_id)]) == 0
        clean(*capsys.readouterr())


@pytest.mark.slow
def test_record_then_replay(
    hostile: tuple[Case, HostileThread], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, server = hostile
    path = tmp_path / "r.jsonl"
    argv = ["record", server.url, "--out", str(path), "--duration", "2s", "--interval", "0.5"]
    code = main([*argv, "--probe-every", "1", "--probe-tokens", "16", *TIMEOUTS])
    out, err = capsys.readouterr()
    clean(out, err)
    assert code == 0
    recording = read_recording(path)
    feed = ReplayFeed(recording, paused=True)
    session = replay_session(recording.header.config(MonitorConfig(url="http://unused")), feed)

    async def replay() -> dict[str, Any]:
        task = asyncio.create_task(session.run())
        await asyncio.sleep(0)  # `run` hands the feed its sink
        feed.seek(feed.duration)  # every input, at once
        view = view_to_dict(session.view())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return view

    view = asyncio.run(replay())
    finite(view)
    one_line_texts(view)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_SAMPLE = re.compile(r"^(specmon_\w+)(\{[^}]*\})? (\S+)$")


def _samples(text: str, url: str) -> dict[str, float]:
    """The exporter's samples of one target, by name (the first of each)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and f'target="{url}"' in (m[2] or ""):
            found.setdefault(m[1], float(m[3]))
    return found


def _values_finite(text: str) -> None:
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m:
            assert math.isfinite(float(m[3])), line


class Exporter:
    """A `specmon exporter` subprocess serving the hostile server and a good one."""

    def __init__(self, hostile_url: str, good_url: str, *options: str) -> None:
        self.base = f"http://127.0.0.1:{_free_port()}"
        command = [sys.executable, "-m", "specmon", "exporter", "--listen", self.base[7:]]
        command += ["--url", hostile_url, "--url", good_url, "--interval", "0.5"]
        command += ["--probe-every", "1", "--probe-tokens", "16", "--no-history", *TIMEOUTS]
        self.process = subprocess.Popen(
            [*command, *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def wait_for(self, url: str, *names: str) -> str:
        """/metrics once `url` is up with every one of `names` served."""
        deadline = time.monotonic() + LIMIT_S
        while True:
            assert self.process.poll() is None, self.process.communicate()
            assert time.monotonic() < deadline, f"{url} never showed {names}"
            try:
                text = httpx.get(self.base + "/metrics", timeout=5).text
            except httpx.HTTPError:
                text = ""
            mine = _samples(text, url)
            if mine.get("specmon_target_up") == 1.0 and all(n in mine for n in names):
                return text
            time.sleep(0.1)  # polling a subprocess: no event to await

    def stop(self) -> None:
        """Stop it: it must still have been running; no traceback said."""
        alive = self.process.poll() is None
        self.process.terminate()
        out, err = self.process.communicate(timeout=30)
        clean(out, err)
        assert alive, err


@pytest.mark.slow
def test_exporter_keeps_the_good_target(hostile: tuple[Case, HostileThread]) -> None:
    """The fleet of one exporter: the hostile target and a good one. It serves throughout, the
    good target up with its probe figures, every value finite."""
    _, server = hostile
    with SimThread(FAST) as good:
        exporter = Exporter(server.url, good.url)
        try:
            text = exporter.wait_for(good.url, "specmon_probe_decode_tokens_per_second")
            assert "specmon_target_up" in _samples(text, server.url)
            _values_finite(text)
        finally:
            exporter.stop()


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.crash_on_main], ids=lambda c: c.name)
def test_multi_target_probes_answer(case: Case) -> None:
    """`--multi-target`: `/probe?target=` of the hostile target and of the good one answer, and
    the good one's probe has its figures."""
    with HostileThread(case) as server, SimThread(FAST) as good:
        exporter = Exporter(server.url, good.url, "--multi-target")
        try:
            exporter.wait_for(good.url)
            for url in (server.url, good.url):
                answer = httpx.get(exporter.base + "/probe", params={"target": url}, timeout=30)
                assert answer.status_code == 200, answer.text
                _values_finite(answer.text)
            assert "specmon_probe_decode_tokens_per_second" in _samples(answer.text, good.url)
        finally:
            exporter.stop()
