"""A completed bench: its protocol, the server's launch markers and the snapshot itself."""

from __future__ import annotations

from dataclasses import dataclass

from specmon.model.gpu import GpuState
from specmon.model.probe import RunFigures
from specmon.model.server import ServerInfo


@dataclass(frozen=True, slots=True)
class Protocol:
    """The bench protocol: two snapshots compare only when these agree (docs/design.md §5)."""

    runs: int
    warmup: int
    max_tokens: int
    temperature: float
    prompt: str
    concurrency: int = 1
    """Requests in flight at once: each timed run is this many concurrent streams (`ab`)."""


@dataclass(frozen=True, slots=True)
class Lifetime:
    """What identifies one launch of a server, recorded when a snapshot is taken.

    A later reading of the same server is compared with it (`analysis.validity.lifetime_check`)
    to tell whether the server restarted since.
    """

    launch: str
    """A hash of every server arg the server reported (secrets masked): SGLang draws a fresh
    `random_seed` and sizes `max_total_num_tokens` at every start, so a relaunch with the same
    flags usually changes it."""
    started_at: float | None = None
    """The server process's start (unix seconds): `process_start_time_seconds` from /metrics
    (vLLM), or psutil when the server runs on this machine."""
    counters: tuple[tuple[str, float], ...] = ()
    """Cumulative counters at the end of the bench (name, value): a value that went down later
    means a restart."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A completed bench: its runs, the protocol and the server it ran against."""

    created_at: float
    """Unix seconds."""
    url: str
    label: str | None
    server: ServerInfo
    protocol: Protocol
    runs: tuple[RunFigures, ...]
    id: int | None = None
    """Assigned by the store."""
    gpu: GpuState | None = None
    """The GPU state during the runs, when it could be read."""
    lifetime: Lifetime | None = None
    """The server's launch markers at the end of the bench (None in older records)."""
