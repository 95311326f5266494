"""`specmon replay FILE`: the live dashboard driven by a recording, with pause, seek and speed.

The dashboard is the live one (`SpecmonApp`) with its feed replaced by the recording's
(`ReplayFeed`): the same handlers build the same state from the same inputs, so the screens are
the session's. Inputs reach the handlers directly, not as messages: a message queue would let a
newer sample replace an older one not yet handled (`SampleReady.can_replace`), and a seek
delivers hundreds at once. The keys that act on a server (b, s, p) are off, said when pressed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message

from specmon.config import MonitorConfig
from specmon.session.live import LiveState
from specmon.session.replay import ReplayFeed
from specmon.session.store_baseline import StoreBaseline
from specmon.ui.app import SpecmonApp
from specmon.ui.messages import (
    BaselineSampleReady,
    BenchDone,
    BenchFailed,
    BenchNote,
    BenchProgress,
    PostingSink,
    ProbeDone,
    ProbeFailed,
    ProbePaused,
    SampleReady,
)
from specmon.ui.screens.help import KEYS_AND_COMPARISON
from specmon.ui.widgets.keys_line import KeysLine

SEEK_S = 10.0
SEEK_LONG_S = 60.0
REPLAY_OFF = frozenset(("baseline", "snapshot", "toggle_probe"))
"""The actions that would bench or save, or pause the server's probe: off in a replay."""
OFF_KEYS = {"b": "benches the server", "s": "benches the server and saves"}

REPLAY_KEYS = (
    ("space, p", "pause or resume the replay"),
    (
        "←, →",
        f"back or forward {SEEK_S:.0f} s (with shift: {SEEK_LONG_S:.0f} s); back replays "
        "from the start",
    ),
    ("+, -", "faster or slower (×0.25 to ×100)"),
    *(
        (key, f"off in a replay (it {OFF_KEYS[key]})") if key in OFF_KEYS else (key, does)
        for key, does in KEYS_AND_COMPARISON
        if key != "p"
    ),
)
"""The replay's `?`: its own keys, then the dashboard's with those acting on a server off."""


class ReplayApp(SpecmonApp):
    """The dashboard of a recorded session."""

    BINDINGS = [
        # The dashboard's, but p: of a key's bindings in one class, the first runs.
        *(b for b in SpecmonApp.BINDINGS if not (isinstance(b, Binding) and b.key == "p")),
        Binding("space", "pause_replay", "pause", show=False),
        Binding("p", "pause_replay", "pause"),
        Binding("left", "seek_back", "seek", key_display="←→"),
        Binding("right", "seek_forward", "seek", show=False),
        Binding("shift+left", "seek_back(6)", "seek", show=False),
        Binding("shift+right", "seek_forward(6)", "seek", show=False),
        Binding("plus", "faster", "speed", key_display="+-"),
        Binding("minus", "slower", "speed", show=False),
    ]

    def __init__(
        self, config: MonitorConfig, feed: ReplayFeed, *, wall: Callable[[], float] | None = None
    ) -> None:
        """Args:
        config: The recorded session's (`Header.config`).
        feed: The recording's feed.
        wall: The clock of what the replay itself says (default: the feed's position).
        """
        super().__init__(config, None, None, feed=feed, wall=wall or feed.wall)
        self.replay = feed
        self._catching_up = False
        """A seek is delivering many inputs: the View is built once, after them."""
        self._handlers: dict[type[Message], Callable[[Any], None]] = {
            SampleReady: self._on_sample, BaselineSampleReady: self._on_baseline_sample,
            ProbeDone: self._on_probe, ProbeFailed: self._on_probe_failed,
            ProbePaused: self._on_probe_paused, BenchProgress: self._on_bench_progress,
            BenchDone: self._on_bench_done, BenchFailed: self._on_bench_failed,
            BenchNote: self._on_bench_note,
        }  # fmt: skip
        """The dashboard's handler of each input (`PostingSink` makes them messages)."""
        self.store_baseline = self._recorded_store_baseline()
        feed.on_rewind = self._rewind
        feed.on_start = self.seek_to
        feed.on_move = self._show_position

    def _recorded_store_baseline(self) -> StoreBaseline:
        """The store lookups of the recorded dashboard, answered from the recording."""
        feed = self.replay
        return StoreBaseline(None, self.live, lookup=feed.lookup if feed.answers_lookups else None)

    def new_live_state(self) -> LiveState:
        """The dashboard's, marked a replay: its top line says the state is the recording's."""
        live = super().new_live_state()
        live.replay = True
        return live

    def keys_off(self) -> frozenset[str]:
        """b and s; p pauses the replay, not the server's probe."""
        return REPLAY_OFF

    def _keys_note(self) -> str:
        """REPLAY, the recorded time, the speed (or ‖ paused); frozen, when it is."""
        feed = self.replay
        clock = time.strftime("%H:%M:%S", time.localtime(feed.wall()))
        pace = "‖" if feed.paused else "end" if feed.at_end else f"×{feed.speed:g}"
        return "  ".join((f"REPLAY {clock} {pace}", *(["frozen"] if self.frozen else [])))

    def _start_workers(self) -> None:
        self.run_worker(
            self.replay.run(PostingSink(self._replayed)), group="feed", exit_on_error=False
        )

    def _replayed(self, message: Message) -> None:
        """Hand a recorded input to the dashboard's handler for it, now."""
        self._handlers[type(message)](message)

    def refresh_view(self) -> None:
        """As the dashboard's, once a seek has delivered its inputs."""
        if not self._catching_up:
            super().refresh_view()

    def say_at_start(self) -> None:
        """What is replayed, from when: nothing is sent to the server."""
        recorded = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.replay.started_at))
        self.live.log(
            self.wall(),
            "info",
            f"replay of {self.config.url} recorded {recorded} "
            f"(specmon {self.replay.recording.header.specmon}): nothing is sent to it",
        )
        for note in self.tuning_notes:
            self.live.log(self.wall(), "warn", note)

    def _rewind(self) -> None:
        """Drop the state built so far: the seek rebuilds it from the first input."""
        self.live = self.new_live_state()
        self.store_baseline = self._recorded_store_baseline()
        self._shown_verdict = None
        self.say_at_start()

    def _show_position(self) -> None:
        try:
            keys = self.screen_stack[0].query_one(KeysLine)
        except (NoMatches, IndexError):  # not composed yet: the keys line starts with the note
            return
        keys.set_note(self._keys_note())

    # Keys.

    def action_pause_replay(self) -> None:
        """space, p: pause or resume the replay."""
        self.replay.set_paused(not self.replay.paused)

    def action_seek_back(self, steps: int = 1) -> None:
        """←: 10 s back (shift: 1 min), replaying from the start."""
        self.seek_to(self.replay.position - steps * SEEK_S)

    def action_seek_forward(self, steps: int = 1) -> None:
        """→: 10 s forward (shift: 1 min)."""
        self.seek_to(self.replay.position + steps * SEEK_S)

    def seek_to(self, position: float) -> None:
        """Show the dashboard as it was `position` seconds into the recording."""
        self._catching_up = True
        try:
            self.replay.seek(position)
        finally:
            self._catching_up = False
        self.refresh_view()

    def action_faster(self) -> None:
        """+: the next speed up."""
        self.replay.faster()

    def action_slower(self) -> None:
        """-: the next speed down."""
        self.replay.slower()

    def action_baseline(self) -> None:
        """b: off (it would bench the server)."""
        self._refuse("b", OFF_KEYS["b"])

    def action_snapshot(self) -> None:
        """s: off (it would bench the server and save)."""
        self._refuse("s", OFF_KEYS["s"])

    def _refuse(self, key: str, does: str) -> None:
        self.notify(f"replay: {key} is off (it {does}); this is a recording", severity="warning")

    def action_help(self) -> None:
        """?: the replay's keys, then what every number means."""
        self.push_help("replay-help", REPLAY_KEYS)
