"""`specmon --record FILE`: the dashboard records what it receives, store lookups included, and
`specmon replay` shows the session with the same figures and the same baseline."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from live_helpers import until

from specmon.cli import main
from specmon.config import MonitorConfig, Targets
from specmon.session.baselines import BaselineOrigin
from specmon.session.recording import Header, RecordingWriter, read_recording
from specmon.session.replay import ReplayFeed, replay_session
from specmon.session.server_session import dashboard_session
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui.app import SpecmonApp
from specmon.ui.replay_app import ReplayApp

FAST = SimConfig(plain_step_ms=4.0, cycle_ms=7.0, accept_length=2.1, ttft_ms=5.0, seed=11)
PLAIN = replace(FAST, speculative_algorithm=None)  # the simulator drops the other spec args


@pytest.fixture
def sims() -> Iterator[tuple[SimThread, SimThread]]:
    with SimThread(FAST) as spec, SimThread(PLAIN) as base:
        yield spec, base


def _recording_app(
    spec: SimThread, base: SimThread, store: Store, path: Path, max_bytes: int = 10**9
) -> SpecmonApp:
    config = MonitorConfig(
        url=spec.url,
        baseline_url=base.url,
        interval=0.2,
        probe_every=0.5,
        probe_tokens=60,
        baseline_runs=3,
    )
    writer = RecordingWriter(path, Header.of(config, time.time()), max_bytes=max_bytes)
    targets = Targets(Target(spec.url), Target(base.url))
    return SpecmonApp(dashboard_session(config, targets, store, recording=writer))


async def _replayed_to_the_end(path: Path) -> ReplayApp:
    recording = read_recording(path)
    config = recording.header.config(MonitorConfig(url="unused"))
    app = ReplayApp(replay_session(config, ReplayFeed(recording, paused=True)))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.replay.running)
        app.seek_to(app.replay.duration)
        await pilot.pause()
    return app


async def test_a_recorded_dashboard_replays_with_its_probes_and_its_stored_baseline(
    sims: tuple[SimThread, SimThread], tmp_path: Path
) -> None:
    spec, base = sims
    with Store(tmp_path / "db") as store:
        # A first session takes the baseline (b); the second finds it in the store.
        first = _recording_app(spec, base, store, tmp_path / "first.jsonl")
        async with first.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: first.session.live.server.info is not None)
            await pilot.press("b")
            await until(pilot, lambda: first.session.live.baseline.snapshot is not None)
        second = _recording_app(spec, base, store, tmp_path / "second.jsonl")
        async with second.run_test(size=(120, 40)) as pilot:
            await until(
                pilot,
                lambda: (
                    second.session.live.baseline.snapshot is not None
                    and len(second.session.live.probes) >= 3
                ),
            )
            events = [e.text for e in second.session.live.events]
    path = tmp_path / "second.jsonl"
    assert f"recording to {path}: specmon replay {path} shows it again" in events

    for dashboard, path in ((first, "first.jsonl"), (second, "second.jsonl")):
        replayed = (await _replayed_to_the_end(tmp_path / path)).session.live
        live = dashboard.session.live
        assert replayed.baseline.snapshot == live.baseline.snapshot
        assert replayed.baseline.origin == live.baseline.origin
        # The recording may end before the dashboard's last probe, never hold another one.
        assert [p.figures for p in replayed.probes] == [p.figures for p in live.probes][
            : len(replayed.probes)
        ]
    assert replayed.baseline.origin == BaselineOrigin.STORE


async def test_the_dashboard_says_when_the_recording_stops_at_its_cap(
    sims: tuple[SimThread, SimThread], tmp_path: Path
) -> None:
    spec, base = sims
    with Store(tmp_path / "db") as store:
        app = _recording_app(spec, base, store, tmp_path / "r.jsonl", max_bytes=4000)
        async with app.run_test(size=(120, 40)) as pilot:
            said = "recording stopped: the size cap (0 MB) was reached"
            await until(pilot, lambda: any(e.text == said for e in app.session.live.events))
    assert read_recording(tmp_path / "r.jsonl").ended == "the size cap (0 MB) was reached"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["--url", "http://a:1", "--url", "http://b:2"],
            "--record records one server's dashboard: with several servers, record each with "
            "specmon record",
        ),
        (["--once", "--json"], "--record records the dashboard; --once prints one frame, give one"),
    ],
    ids=["fleet", "once"],
)
def test_record_is_refused_where_it_does_not_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], error: str
) -> None:
    path = tmp_path / "r.jsonl"
    assert main([*args, "--record", str(path), "--db", str(tmp_path / "db")]) == 2
    assert capsys.readouterr().err == f"specmon: error: {error}\n"
    assert not path.exists()
