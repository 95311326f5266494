"""`specmon replay`: a recorded session drives the same dashboard to the same screens.

The recording (tests/fixtures/recordings/sim_session.jsonl, made by make_sim_session.py beside
it) is 39 s of a dashboard's inputs against the simulator, with a baseline bench of the baseline
server from 8 s to 16.5 s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from specmon.cli import main
from specmon.config import MonitorConfig, Targets
from specmon.session.recording import Recording, read_recording
from specmon.session.replay import ReplayFeed, replay_session
from specmon.session.server_session import dashboard_session
from specmon.session.view import View
from specmon.target import Target
from specmon.ui.app import SpecmonApp
from specmon.ui.replay_app import REPLAY_KEYS, ReplayApp
from specmon.ui.screens.comparison import ComparisonScreen
from specmon.ui.widgets.identity_bar import IdentityBar
from specmon.ui.widgets.keys_line import KeysLine

RECORDING = Path(__file__).parents[1] / "fixtures" / "recordings" / "sim_session.jsonl"
MOMENTS = {"probing": 6.0, "benching": 13.0, "compared": 39.0}


def _replay(*, paused: bool = True, speed: float = 1.0) -> ReplayApp:
    recording = read_recording(RECORDING)
    feed = ReplayFeed(recording, paused=paused, speed=speed)
    return ReplayApp(replay_session(recording.header.config(MonitorConfig(url="unused")), feed))


async def _started(pilot: Pilot[None]) -> ReplayApp:
    app = pilot.app
    assert isinstance(app, ReplayApp)
    while not app.replay.running:
        await pilot.pause()
    return app


def _at(moment: float) -> Callable[[Pilot[None]], object]:
    async def run_before(pilot: Pilot[None]) -> None:
        app = await _started(pilot)
        app.seek_to(moment)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("moment", MOMENTS.values(), ids=MOMENTS.keys())
def test_snapshot_of_the_replay(moment: float, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(_replay(), terminal_size=(160, 50), run_before=_at(moment))


async def _live_view(recording: Recording, until: float) -> View:
    """The live dashboard's View after the recording's inputs up to `until` came to its session,
    one at a time, with the clock at each input's time."""
    header = recording.header
    clock = [header.started_at]
    config = header.config(MonitorConfig(url="unused"))
    session = dashboard_session(config, Targets(Target(config.url)), None, wall=lambda: clock[0])
    app = SpecmonApp(session, start_workers=False)
    async with app.run_test(size=(160, 50)) as pilot:
        sink = app.session
        sink.follow_baseline_server()  # as `ServerSession.run` does before the feed's first input
        for entry in recording.entries:
            if entry.at - header.started_at > until:
                break
            clock[0] = entry.at
            getattr(sink, entry.kind)(*entry.args)
            await pilot.pause()
        clock[0] = header.started_at + until
        app.refresh_view()
        assert app._last_view is not None
        return app._last_view


def _without_start(view: View, started_at: float) -> View:
    """The View less the events log's lines from the start (the live dashboard says what it
    watches and that it has no store; the replay, what it replays) and the replay's mark."""
    events = tuple(e for e in view.events if e.wall > started_at)
    return dataclasses.replace(
        view, events=events, identity=dataclasses.replace(view.identity, replay=False)
    )


@pytest.mark.parametrize("moment", MOMENTS.values(), ids=MOMENTS.keys())
async def test_the_replay_shows_what_the_live_dashboard_showed(moment: float) -> None:
    app = _replay()
    async with app.run_test(size=(160, 50)) as pilot:
        await _started(pilot)
        app.seek_to(moment)
        await pilot.pause()
        replayed = app._last_view
        top = str(app.screen_stack[0].query_one(IdentityBar).render())
    assert replayed is not None
    live = await _live_view(app.replay.recording, moment)
    started_at = app.replay.started_at
    assert _without_start(replayed, started_at) == _without_start(live, started_at)
    assert replayed.events[0].text.startswith("replay of http://127.0.0.1:")
    # Its top line is the recording's state, said so (the live one's is not a replay).
    assert replayed.identity.replay and not live.identity.replay
    assert f"● {replayed.identity.state} (replay" in top


async def test_seeking_back_rebuilds_the_same_screen() -> None:
    app = _replay()
    async with app.run_test(size=(160, 50)) as pilot:
        await _started(pilot)
        app.seek_to(13.0)
        await pilot.pause()
        first = app._last_view
        app.seek_to(39.0)
        await pilot.press("left", "left", "shift+left")  # 39 → 29 → 19 → back to the start
        assert app.replay.position == 0.0
        app.seek_to(13.0)
        await pilot.pause()
        assert app._last_view == first


async def test_keys_pause_seek_and_change_the_speed() -> None:
    app = _replay()
    async with app.run_test(size=(160, 50)) as pilot:
        await _started(pilot)
        feed = app.replay
        await pilot.press("right", "right", "shift+right")
        assert feed.position == pytest.approx(min(80.0, feed.duration))
        await pilot.press("left")
        assert feed.position == pytest.approx(feed.duration - 10)
        await pilot.press("plus", "plus")
        assert feed.speed == 5.0
        await pilot.press("minus", "minus", "minus", "minus", "minus")
        assert feed.speed == 0.25
        assert feed.paused
        await pilot.press("space")
        assert not feed.paused
        await pilot.press("p")
        assert feed.paused
        note = app.screen_stack[0].query_one(KeysLine).note
        assert note.startswith("REPLAY ") and note.endswith(" ‖")


@pytest.mark.parametrize(
    ("key", "does"), [("b", "benches the server"), ("s", "benches the server and saves")]
)
async def test_keys_that_act_on_a_server_are_off(key: str, does: str) -> None:
    app = _replay()
    async with app.run_test(size=(160, 50)) as pilot:
        await _started(pilot)
        await pilot.press(key)
        await pilot.pause()
        shown = [n.message for n in app._notifications]
        assert shown == [f"replay: {key} is off (it {does}); this is a recording"]
        assert app.session.live.bench is None


async def test_playing_reaches_the_end_as_seeking_there_does() -> None:
    app = _replay(paused=False, speed=100.0)
    async with app.run_test(size=(160, 50)) as pilot:
        while not app.replay.at_end:
            await pilot.pause(0.05)
        await pilot.pause()
        played = app._last_view
        assert app.screen_stack[0].query_one(KeysLine).note.endswith(" end")
        app.seek_to(0.0)
        app.seek_to(app.replay.duration)
        await pilot.pause()
        assert app._last_view == played


async def test_the_keys_line_fits_60_columns() -> None:
    app = _replay()
    async with app.run_test(size=(60, 24)) as pilot:
        await _started(pilot)
        app.replay.set_speed(0.25)
        await pilot.pause()
        keys = app.screen_stack[0].query_one(KeysLine)
        text = str(keys.render())
        assert "REPLAY" in text and len(text.rstrip()) <= 60


@pytest.mark.parametrize(
    ("content", "args", "error"),
    [
        ("not a recording\n", [], "{path} is not a specmon recording"),
        (None, ["--start", "5m"], "--start 5 min is past the end of {path} (39 s recorded)"),
    ],
    ids=["not_a_recording", "start_past_the_end"],
)
def test_replay_refuses_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    args: list[str],
    error: str,
) -> None:
    path = RECORDING
    if content is not None:
        path = tmp_path / "bad.jsonl"
        path.write_text(content)
    assert main(["replay", str(path), *args]) != 0
    assert capsys.readouterr().err == f"specmon: error: {error.format(path=path)}\n"


async def test_start_shows_the_moment_as_a_seek_there_does() -> None:
    recording = read_recording(RECORDING)
    config = recording.header.config(MonitorConfig(url="unused"))
    started = ReplayApp(replay_session(config, ReplayFeed(recording, paused=True, start=13.0)))
    async with started.run_test(size=(160, 50)) as pilot:
        await _started(pilot)
        await pilot.pause()
        assert started.replay.position == 13.0
        at_start = started._last_view
    sought = _replay()
    async with sought.run_test(size=(160, 50)) as pilot:
        await _started(pilot)
        sought.seek_to(13.0)
        await pilot.pause()
        assert sought._last_view == at_start


async def test_help_lists_the_replay_keys_and_the_keys_that_are_off() -> None:
    app = _replay()
    async with app.run_test(size=(160, 50)) as pilot:
        await _started(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        keys = dict(REPLAY_KEYS)
        assert keys["space, p"] == "pause or resume the replay"
        assert keys["b"] == "off in a replay (it benches the server)"
        assert "p" not in keys  # p pauses the replay, not the server's probe
        assert app.screen is app.get_screen("replay-help")


async def test_a_recording_cut_mid_line_says_so_where_the_replay_ends(tmp_path: Path) -> None:
    """Issue 38: a recording cut mid-line (the recorder killed mid-write) played to its end
    without a word in the replay's events log (only a warning on stderr, under the screen)."""
    whole = RECORDING.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(whole[: whole.rstrip(b"\n").rfind(b"\n") + 40])
    recording = read_recording(cut)
    assert recording.cut_note is not None
    feed = ReplayFeed(recording, paused=True)
    app = ReplayApp(replay_session(recording.header.config(MonitorConfig(url="unused")), feed))
    said = f"end of the replay: {recording.cut_note}"
    async with app.run_test(size=(160, 50)) as pilot:
        await _started(pilot)
        app.seek_to(recording.duration / 2)
        await pilot.pause()
        assert said not in [e.text for e in app.session.live.events]
        app.seek_to(recording.duration)
        await pilot.pause()
        assert [e.text for e in app.session.live.events].count(said) == 1
        assert said in str(app.query_one("#events").render())
        app.seek_to(0.0)  # back: the state is rebuilt; at the end again it is said again, once
        app.seek_to(recording.duration)
        await pilot.pause()
        assert [e.text for e in app.session.live.events].count(said) == 1


async def test_c_in_a_replay_says_why_there_is_no_table() -> None:
    """Issue 38: `c` in a replay showed an empty table's header, the reason only in the status
    line ("no snapshot store"). Now the table gives way to why, and where the snapshots are."""
    app = _replay()
    async with app.run_test(size=(80, 24)) as pilot:
        await _started(pilot)
        await pilot.press("c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ComparisonScreen)
        assert not screen.query_one(DataTable).display
        said = str(screen.query_one("#comparison-row", Static).render())
        assert said.startswith("a replay reads no snapshot store: ") and "snapshots export" in said
