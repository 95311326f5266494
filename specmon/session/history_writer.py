"""The dashboard's lasting history: what it records of each sample and probe, written to the
store from a thread of its own, so that no frame waits for the disk or another process's lock.

`HistoryRecorder` turns the dashboard's state into readings and marks (on the UI's thread: a
few attribute reads); `HistoryWriter` batches them into the store every `FLUSH_EVERY_S`, keeps
the store within its limits (`history_store.maintain`) and looks for drift.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from specmon.analysis.drift import JUDGED, Drift, drifts
from specmon.config import MonitorConfig
from specmon.errors import SpecmonError
from specmon.history import Figure, Mark, MarkKind, Point
from specmon.model import RunFigures, Sample
from specmon.session.live import LiveState
from specmon.session.tracker import Change
from specmon.session.view import Level
from specmon.session.window import MEAN_SPAN_S, RATE_SPAN_S
from specmon.storage import history_store
from specmon.storage.history_store import Limits
from specmon.storage.store import Store

FLUSH_EVERY_S = 5.0
MAINTAIN_EVERY_S = 60.0
DRIFT_EVERY_S = 600.0
DRIFT_LOOKBACK_S = 24 * 3600.0
"""Drift is judged over at most the last day of the current lifetime."""
T = TypeVar("T")
CLOSE_WAIT_S = 2.0
"""On quitting, the last batch gets this long to be written."""


class HistoryWriter:
    """Writes readings and marks to the store at `path` from its own thread and connection.

    Errors and drift findings come back through callbacks, called on the writer's thread.
    """

    def __init__(
        self,
        path: Path,
        target: str,
        limits: Limits,
        *,
        on_error: Callable[[str], object],
        on_drift: Callable[[Drift], object],
        wall: Callable[[], float] = time.time,
        flush_every_s: float = FLUSH_EVERY_S,
    ) -> None:
        """Args:
        path: The store's file (the writer opens a connection of its own).
        target: The server's URL, for drift.
        limits: How much history the store keeps.
        on_error: Told each new store error (one line); the history goes on being tried.
        on_drift: Told each drift finding (once per figure and lifetime start).
        wall: Wall clock.
        flush_every_s: How long a batch gathers readings before it is written.
        """
        self.path = path
        self.flush_every_s = flush_every_s
        self.target = target
        self.limits = limits
        self.on_error = on_error
        self.on_drift = on_drift
        self.wall = wall
        self._queue: queue.SimpleQueue[tuple[Sequence[Point], Sequence[Mark]] | None] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._run, name="specmon-history", daemon=True)
        self._said: str | None = None
        self._found: set[tuple[Figure, float]] = set()

    def start(self) -> None:
        """Start the writer's thread."""
        self._thread.start()

    def add(self, points: Sequence[Point], marks: Sequence[Mark] = ()) -> None:
        """Queue readings and marks (never blocks)."""
        if points or marks:
            self._queue.put((points, marks))

    def close(self) -> None:
        """Write what is queued (waiting at most `CLOSE_WAIT_S`) and stop."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(CLOSE_WAIT_S)

    def _run(self) -> None:
        store = self._attempt(Store, self.path)
        if store is None:
            return
        with store:
            # Kept and judged (a drift of the last session too) after the first batch, not at
            # once: the dashboard's first frames are drawn meanwhile.
            maintained = drift_at = -math.inf
            stopping = False
            while not stopping:
                points, marks, stopping = self._batch()
                self._attempt(history_store.append, store, points, marks)
                if stopping:
                    break  # quitting: the rest waits for the next start
                now = self.wall()
                if now - maintained >= MAINTAIN_EVERY_S:
                    maintained = now
                    self._attempt(history_store.maintain, store, now, self.limits)
                if now - drift_at >= DRIFT_EVERY_S:
                    drift_at = now
                    self._attempt(self._look_for_drift, store, now)

    def _batch(self) -> tuple[list[Point], list[Mark], bool]:
        """What comes in over `flush_every_s` (waiting for the first); True: stop after it."""
        points: list[Point] = []
        marks: list[Mark] = []
        deadline: float | None = None
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                return points, marks, False
            if item is None:
                return points, marks, True
            points.extend(item[0])
            marks.extend(item[1])
            if deadline is None:
                deadline = time.monotonic() + self.flush_every_s

    def _look_for_drift(self, store: Store, now: float) -> None:
        start = now - DRIFT_LOOKBACK_S
        series = {
            f: history_store.minute_readings(store, self.target, f, start, now) for f in JUDGED
        }
        found = drifts(series, history_store.marks(store, self.target, start, now))
        for finding in found:
            key = (finding.figure, finding.since)
            if key not in self._found:
                self._found.add(key)
                self.on_drift(finding)

    def _attempt(self, work: Callable[..., T], *args: Any) -> T | None:
        """Run `work`; a store error is told once (until another one) and the history goes on."""
        try:
            result = work(*args)
        except SpecmonError as exc:
            message = f"history: {exc}"
            if message != self._said:
                self._said = message
                self.on_error(message)
            return None
        self._said = None
        return result


class HistoryRecorder:
    """What the dashboard records of its state: the figures its sparklines show, each sample's
    and each probe's, and restarts, config changes and drafting switches as marks."""

    def __init__(self, live: LiveState, writer: HistoryWriter) -> None:
        self.live = live
        self.writer = writer

    def started(self, wall: float) -> None:
        """specmon began watching: a mark, so that a gap before it reads as specmon's."""
        self.writer.add((), (Mark(self.live.url, wall, MarkKind.WATCH, "specmon started"),))

    def on_sample(self, sample: Sample, changes: Sequence[Change]) -> None:
        """After `LiveState.on_sample`: the server's figures now, and its restarts."""
        url, window = self.live.url, self.live.server.window
        info = self.live.server.info
        figures: list[tuple[Figure, float | None]] = []
        rate = window.decode_tok_s(RATE_SPAN_S)
        figures.append((Figure.DECODE, rate.value if rate else None))
        if info is not None and info.speculative is not None:
            accept = window.accept_length(MEAN_SPAN_S)
            figures.append((Figure.SERVER_ACCEPT, accept.value if accept else None))
        marks = [Mark(url, sample.wall, _kind(c), c.text) for c in changes if c.restart or c.switch]
        self.writer.add(self._points(sample.wall, figures), marks)

    def on_probe(self, wall: float, figures: RunFigures) -> None:
        """A probe's decode speed, accept length and cycle."""
        self.writer.add(
            self._points(
                wall,
                [
                    (Figure.PROBE_DECODE, figures.decode_tok_s),
                    (Figure.ACCEPT, figures.accept_length),
                    (Figure.CYCLE, figures.cycle_ms),
                ],
            )
        )

    def _points(self, wall: float, figures: Sequence[tuple[Figure, float | None]]) -> list[Point]:
        started = self.live.server.started_at
        # Whole seconds: a process's start time read twice can differ in its fractions.
        lifetime = round(started) if started is not None else None
        return [Point(self.live.url, lifetime, wall, f, v) for f, v in figures if v is not None]


def _kind(change: Change) -> MarkKind:
    if change.switch:
        return MarkKind.SWITCH
    return MarkKind.CONFIG if change.config else MarkKind.RESTART


def start_history(
    path: Path,
    live: LiveState,
    config: MonitorConfig,
    wall: float,
    say: Callable[[Level, str], object],
) -> HistoryRecorder:
    """Start recording the watched server's history into the store at `path`.

    Args:
        path: The store's file.
        live: The dashboard's state.
        config: Its `history_days` and `history_mb` are the limits.
        wall: Now.
        say: Told (from the writer's thread) store errors ("warn") and drift findings ("warn").
    """
    limits = Limits(config.history_days * 86400, int(config.history_mb * 1024 * 1024))
    writer = HistoryWriter(
        path,
        live.url,
        limits,
        on_error=lambda text: say("warn", text),
        on_drift=lambda found: say("warn", found.text()),
    )
    writer.start()
    recorder = HistoryRecorder(live, writer)
    recorder.started(wall)
    return recorder
