"""The lasting history's data: the figures the dashboard records, their readings and the marks
(restarts, config changes) on its time axis. Written by `session.history_writer`, kept by
`history_store`, read back by the zoomed sparklines and `specmon history`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Figure(StrEnum):
    """A figure of the history: the sparklines' and what drift is judged on."""

    DECODE = "decode_tok_s"
    """The server's output tok/s over all requests (the decode sparkline)."""
    SERVER_ACCEPT = "server_accept_length"
    """The server's accept length over all requests (its counters)."""
    PROBE_DECODE = "probe_decode_tok_s"
    """One probe's decode tok/s."""
    ACCEPT = "accept_length"
    """One probe's accept length (the accept-length sparkline)."""
    CYCLE = "cycle_ms"
    """One probe's draft+verify cycle."""


class MarkKind(StrEnum):
    """What a mark on the time axis says happened."""

    WATCH = "watch"
    """specmon began watching (a gap before it is specmon's, not the server's)."""
    RESTART = "restart"
    """The server restarted."""
    CONFIG = "config"
    """The server came back with other flags or another speculation config."""
    SWITCH = "switch"
    """An adaptive server switched how much it drafts."""


@dataclass(frozen=True, slots=True)
class Point:
    """One reading of a figure, as it came.

    Attributes:
        target: The server's URL.
        lifetime: The server process's start (unix seconds) when known.
        at: When it was read (unix seconds).
        figure: Which figure.
        value: Its value.
    """

    target: str
    lifetime: float | None
    at: float
    figure: Figure
    value: float


@dataclass(frozen=True, slots=True)
class Mark:
    """Something that happened to a server, on the history's time axis."""

    target: str
    at: float
    kind: MarkKind
    text: str


@dataclass(frozen=True, slots=True)
class Reading:
    """A stored reading: one as it came (`span` 0), or a bucket of `count` of them from `at` to
    `at + span` (their mean, lowest and highest), in the server lifetime that started at
    `lifetime` (None: not known)."""

    at: float
    span: float
    value: float
    low: float
    high: float
    count: int
    lifetime: float | None = None
