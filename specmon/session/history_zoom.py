"""The sparklines' zoom (`z`): 5 minutes live, then 1 hour, 24 hours and all the history, cut
into as many columns as a wide sparkline has. Pure: `zoom_reader.read_zoom` reads a span from
the store (in a worker); what it returns goes to `LiveState.zoomed`, which the View then shows
in place of the live 5 minutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specmon.history import Mark
from specmon.session.window import HISTORY_S


@dataclass(frozen=True, slots=True)
class ZoomLevel:
    """A span the sparklines show: `span_s` back from now (None: since the history begins)."""

    label: str
    span_s: float | None


LIVE = ZoomLevel("5 min", HISTORY_S)
"""The live sparklines, from memory (`LiveState`)."""
LEVELS = (LIVE, ZoomLevel("1 h", 3600.0), ZoomLevel("24 h", 86400.0), ZoomLevel("all", None))
COLUMNS = 120
"""Points of a zoomed sparkline: as many as a 160-column panel gives cells."""


@dataclass(frozen=True, slots=True)
class Zoomed:
    """A span of the history, cut into columns: each its readings' mean.

    Attributes:
        level: The span.
        decode: The server's output tok/s per column (the decode sparkline).
        accept: The probe's accept length per column.
        marks: The columns where the server restarted or changed config.
        mark_texts: What each mark says, for the events log's reader.
    """

    level: ZoomLevel
    decode: tuple[float, ...]
    accept: tuple[float, ...]
    marks: tuple[int, ...]
    mark_texts: tuple[str, ...]


def next_level(level: ZoomLevel) -> ZoomLevel:
    """The level `z` goes to from `level`: 5 min → 1 h → 24 h → all → 5 min."""
    return LEVELS[(LEVELS.index(level) + 1) % len(LEVELS)]


def filled(values: Sequence[float | None]) -> tuple[float, ...]:
    """Columns from the first with readings; a column without any (specmon was not running, or
    between probes) carries the one before it, so that the line keeps its time axis."""
    out: list[float] = []
    for value in values:
        if value is not None:
            out.append(value)
        elif out:
            out.append(out[-1])
    return tuple(out)


def mark_columns(marks: Sequence[Mark], start: float, step: float) -> tuple[int, ...]:
    """Each mark's column, counted from the right (0: the newest column), so that it stays put
    however many leading columns `filled` left out."""
    return tuple(
        sorted({COLUMNS - 1 - min(COLUMNS - 1, int((m.at - start) // step)) for m in marks})
    )
