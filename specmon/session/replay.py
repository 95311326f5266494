"""A recording played back as the dashboard's feed (`specmon replay FILE`).

The dashboard gets every recorded input through the same `FeedSink` calls the live feed made, at
the recorded pace times `speed`, so its state, and so its screens, are those of the session.
Seeking forward delivers the inputs in between at once; seeking back starts over from the first
input (`on_rewind` tells the dashboard to drop its state), since the state is built from inputs.
What the dashboard found in the snapshot store it asks for again, and gets the recorded answers
(`lookup`).
Nothing here reaches a server: benches and the probe pause are refused by the dashboard.
"""

from __future__ import annotations

import asyncio
import bisect
import typing
from collections.abc import Callable

from specmon.config import MonitorConfig
from specmon.errors import SpecmonError
from specmon.model import Protocol, ServerInfo
from specmon.session.baselines import BaselineLookup
from specmon.session.feed import FeedSink, NoServerFeed
from specmon.session.recording import Recording
from specmon.session.server_session import ServerSession

SPEEDS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
"""The speeds `+` and `-` step through."""


class ReplayFeed(NoServerFeed):
    """The `Feed` of a recording: its inputs at the recorded pace, with pause, seek and speed
    (nothing of the rest: a replay reaches no server)."""

    def __init__(
        self, recording: Recording, *, speed: float = 1.0, start: float = 0.0, paused: bool = False
    ) -> None:
        """Args:
        recording: What to play.
        speed: Times the recorded pace.
        start: Seconds into the recording to start from (its inputs until then at once).
        paused: Start paused (tests step it with `seek`).
        """
        self.recording = recording
        self.speed = speed
        self.paused = paused
        self.started_at = recording.header.started_at
        self._entries = [e for e in recording.entries if e.kind != "store_lookup"]
        """The inputs the feed delivers; the store's answers are the dashboard's to ask for."""
        self._offsets = [entry.at - self.started_at for entry in self._entries]
        self._answers = [e.args for e in recording.entries if e.kind == "store_lookup"]
        self._asked = 0
        """How many of `_answers` the dashboard was given since the start."""
        self.position = 0.0
        """Seconds into the recording: the time of the last input delivered, or of a seek."""
        self.start = max(0.0, min(start, recording.duration))
        """Seconds into the recording `run` begins at."""
        self._next = 0
        """The index of the next input to deliver."""
        self._sink: FeedSink | None = None
        self._wake: asyncio.Event | None = None
        self.on_rewind: Callable[[], None] | None = None
        """Called before a seek back replays from the start: the dashboard drops its state."""
        self.on_start: Callable[[float], None] | None = None
        """Called by `run` to go to `start` when the dashboard seeks there its own way (drawn
        once, after the inputs); None: `seek`."""
        self.on_move: Callable[[], None] | None = None
        """Called after the position changed (the replay banner shows it)."""

    @property
    def duration(self) -> float:
        """Seconds from the recording's start to its last input."""
        return self.recording.duration

    @property
    def running(self) -> bool:
        """`run` has begun: inputs reach the dashboard."""
        return self._sink is not None

    @property
    def at_end(self) -> bool:
        """Every input was delivered."""
        return self._next >= len(self._offsets)

    def wall(self) -> float:
        """The recorded wall time at the position: the dashboard's clock during a replay."""
        return self.started_at + self.position

    async def run(self, sink: FeedSink) -> None:
        """Deliver the inputs to `sink` at the recorded pace until cancelled."""
        self._sink = sink
        wake = self._wake = asyncio.Event()
        (self.on_start or self.seek)(self.start)
        while True:
            wake.clear()
            if self.paused or self.at_end:
                await wake.wait()
                continue
            delay = (self._offsets[self._next] - self.position) / self.speed
            try:
                await asyncio.wait_for(wake.wait(), max(delay, 0.0))
            except TimeoutError:
                self._deliver_until(self._offsets[self._next])
                self._moved()

    def seek(self, to: float) -> None:
        """Go to `to` seconds into the recording (clamped to it), delivering what lies between;
        back from the position, the dashboard's state is dropped and rebuilt from the start."""
        to = max(0.0, min(to, self.duration))
        if to < self.position:
            self._next, self.position, self._asked = 0, 0.0, 0
            if self.on_rewind is not None:
                self.on_rewind()
        self._deliver_until(to)
        self.position = to
        self._moved()

    def set_paused(self, paused: bool) -> None:
        """Pause or resume the replay."""
        self.paused = paused
        self._moved()

    def set_speed(self, speed: float) -> None:
        """Play at `speed` times the recorded pace."""
        self.speed = speed
        self._moved()

    def faster(self) -> None:
        """The next speed up in `SPEEDS` (the fastest stays)."""
        self.set_speed(SPEEDS[min(bisect.bisect_right(SPEEDS, self.speed), len(SPEEDS) - 1)])

    def slower(self) -> None:
        """The next speed down in `SPEEDS` (the slowest stays)."""
        self.set_speed(SPEEDS[max(bisect.bisect_left(SPEEDS, self.speed) - 1, 0)])

    @property
    def answers_lookups(self) -> bool:
        """The recording holds what the dashboard found in the store (`--record` does; the
        headless `specmon record` has no store lookups to record)."""
        return bool(self._answers)

    def lookup(self, info: ServerInfo, protocol: Protocol) -> BaselineLookup:
        """The store's next recorded answer (a `store_baseline.Lookup`): the dashboard asks at
        the same inputs as when it was recorded, so the nth question gets the nth answer.

        Raises:
            SpecmonError: The recorded failure, or none is left to give.
        """
        if self._asked >= len(self._answers):
            raise SpecmonError("the recording holds no more baseline lookups")
        found, error = self._answers[self._asked]
        self._asked += 1
        if error is not None:
            raise SpecmonError(error)
        return typing.cast(BaselineLookup, found)

    def _deliver_until(self, to: float) -> None:
        sink, entries = self._sink, self._entries
        if sink is None:
            return
        while self._next < len(entries) and self._offsets[self._next] <= to:
            entry = entries[self._next]
            self._next += 1
            self.position = self._offsets[self._next - 1]
            getattr(sink, entry.kind)(*entry.args)

    def _moved(self) -> None:
        if self._wake is not None:
            self._wake.set()  # the run loop plans its next wait from here
        if self.on_move is not None:
            self.on_move()


def replay_session(config: MonitorConfig, feed: ReplayFeed) -> ServerSession:
    """The session a replay shows: the recorded session's configuration (`Header.config`) over
    the recording's feed, its store lookups answered from the recording, its clock the feed's
    position. Nothing is stored."""
    return ServerSession.of_config(
        config,
        feed,
        None,
        lookup=feed.lookup if feed.answers_lookups else None,
        replay=True,
        wall=feed.wall,
    )
