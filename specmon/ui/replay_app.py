"""`specmon replay FILE`: the live dashboard driven by a recording, with pause, seek and speed.

The dashboard is the live one (`SpecmonApp`) over a session whose feed is the recording's
(`ReplayFeed`; `replay_session` builds it, `specmon replay` hands it in): the same
`ServerSession` builds the same state from the same inputs, and the store's answers to its
baseline lookups are the recorded ones, so the screens are the recorded session's. A seek
delivers hundreds of inputs at once: the session builds no View meanwhile, and one after them.
The keys that act on a server (b, s, p) are off, said when pressed.
"""

from __future__ import annotations

import time

from textual.binding import Binding
from textual.css.query import NoMatches

from specmon.session.replay import ReplayFeed
from specmon.session.server_session import ServerSession
from specmon.ui.app import SpecmonApp
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

    def __init__(self, session: ServerSession) -> None:
        """Args:
        session: The recorded session's (`replay_session`): its feed is the recording's, its
            clock the feed's position (what the replay itself says is timed by it).
        """
        feed = session.feed
        if not isinstance(feed, ReplayFeed):
            raise TypeError("a replay shows a session over a ReplayFeed (replay_session)")
        super().__init__(session)
        self.replay = feed
        self._end_said = False
        """Whether the cut end of the recording was said in the events log (since a rewind)."""
        feed.on_rewind = self._rewind
        feed.on_start = self.seek_to
        feed.on_move = self._show_position

    def keys_off(self) -> frozenset[str]:
        """b and s; p pauses the replay, not the server's probe."""
        return REPLAY_OFF

    def _keys_note(self) -> str:
        """REPLAY, the recorded time, the speed (or ‖ paused); frozen, when it is."""
        feed = self.replay
        clock = time.strftime("%H:%M:%S", time.localtime(feed.wall()))
        pace = "‖" if feed.paused else "end" if feed.at_end else f"×{feed.speed:g}"
        return "  ".join((f"REPLAY {clock} {pace}", *(["frozen"] if self.frozen else [])))

    def say_at_start(self) -> None:
        """What is replayed, from when: nothing is sent to the server."""
        recorded = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.replay.started_at))
        session = self.session
        said = (
            f"replay of {self.config.url} recorded {recorded} "
            f"(specmon {self.replay.recording.header.specmon}): nothing is sent to it"
        )
        session.log(self.wall(), "info", said, show=False)
        for note in self.tuning_notes:
            session.log(self.wall(), "warn", note, show=False)

    def _rewind(self) -> None:
        """Drop the state built so far: the seek rebuilds it from the first input."""
        self.session.rewind()
        self._end_said = False
        self.say_at_start()

    def _show_position(self) -> None:
        feed = self.replay
        note = feed.recording.cut_note
        if feed.at_end and note is not None and not self._end_said:
            # Said where the replay ends, not only on stderr before the screen opened.
            self._end_said = True
            self.session.log(self.wall(), "warn", f"end of the replay: {note}")
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
        self.session.on_view = None  # one View after the inputs, not one each
        try:
            self.replay.seek(position)
        finally:
            self.session.on_view = self._view_ready
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
