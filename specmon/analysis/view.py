"""What the dashboard shows: one frozen View per tick, built by `LiveState.view()`.

Widgets render these values and nothing else. Every figure that can be missing is None, and
`missing` says why, so the UI can show "—" with the reason one key away.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["info", "warn", "error"]
StateName = Literal["live", "stale", "down", "connecting"]


@dataclass(frozen=True, slots=True)
class Event:
    """One line of the events log."""

    wall: float
    level: Level
    text: str


@dataclass(frozen=True, slots=True)
class IdentityView:
    """The top line: which server, what it runs, whether we are seeing it live."""

    url: str
    title: str | None
    """"SGLang 0.5.23"."""
    model: str | None
    tp_size: int | None
    speculation: str
    """"EAGLE3 steps=2 topk=1 draft=3" or "no speculation" (or "unknown" before server info)."""
    up_for_s: float | None
    """Seconds since specmon first saw this server lifetime (a lower bound of its uptime)."""
    state: StateName
    state_detail: str


@dataclass(frozen=True, slots=True)
class DecodeView:
    """The headline: probe decode speed."""

    decode_tok_s: float | None
    ms_per_token: float | None
    ttft_ms: float | None
    probe_age_s: float | None
    history: tuple[float, ...]
    """Server-side decode tok/s of the last 5 minutes, one mean per completed 5 s step."""
    history_source: str | None
    probe_state: str
    """"every 10 s", "paused", "off", "failing: …"."""


@dataclass(frozen=True, slots=True)
class SpecView:
    """Acceptance and cycle time."""

    enabled: bool | None
    accept_length: float | None
    """From the probes (median of recent runs)."""
    server_accept_length: float | None
    server_accept_source: str | None
    accept_rate: float | None
    cycle_ms_p50: float | None
    cycle_ms_p95: float | None
    cycle_ms: float | None
    break_even: float | None
    margin: float | None
    tokens_per_cycle: tuple[int, ...]
    """Counts of verify steps by tokens they produced (index 0 = 1 token), last probe."""
    accept_history: tuple[float, ...] = ()
    """Accept length of each probe of the last 5 minutes, oldest first."""


@dataclass(frozen=True, slots=True)
class BaselineView:
    """The current baseline and the comparison against it."""

    present: bool
    snapshot_id: int | None
    tok_s: float | None
    tok_s_min: float | None
    tok_s_max: float | None
    runs: int
    age_s: float | None
    origin: str | None
    """"baseline server http://…" or "this server, speculation off"."""
    current_tok_s: float | None
    """Mean decode tok/s of the recent probes: the other side of the comparison."""
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    valid: bool | None
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    """GPU conditions that differ between the baseline and now (they do not make it stale)."""
    progress: tuple[int, int, float | None] | None
    """(runs done, runs total, seconds left) while a baseline is being taken."""
    waiting: bool
    """Watching for the server to come back without speculation to take the baseline."""


@dataclass(frozen=True, slots=True)
class ServerView:
    """Server-side figures from /metrics."""

    running: float | None
    queued: float | None
    kv_usage: float | None
    decode_tok_s: float | None
    decode_source: str | None
    ttft_ms: float | None
    itl_ms: float | None
    metrics_state: str
    """"ok", "off (--enable-metrics)", "failing: …"."""


@dataclass(frozen=True, slots=True)
class GpuView:
    """GPUs, host and server process, from NVML here or a DCGM-style endpoint."""

    source: str | None
    """Where readings come from ("NVML on this machine", "specmon agent at …")."""
    unavailable: str | None
    """Why there are no GPU readings, with how to get them."""
    summary: str | None
    """One line for all GPUs: models, max util, throttling, other processes."""
    warn: bool
    """Throttling, a failed GPU or another process on a GPU."""
    lines: tuple[str, ...]
    """One line per GPU."""
    util_history: tuple[tuple[float, ...], ...]
    """Per GPU, its utilisation over the last minute."""
    host: str | None
    """Host CPU/memory and the server process's CPU/RSS, when known."""


@dataclass(frozen=True, slots=True)
class SourceView:
    """One source's health, for the diagnostics screen."""

    name: str
    age_s: float | None
    error: str | None


@dataclass(frozen=True, slots=True)
class View:
    """The whole dashboard at one tick."""

    identity: IdentityView
    decode: DecodeView
    spec: SpecView
    baseline: BaselineView
    server: ServerView
    gpus: GpuView
    events: tuple[Event, ...]
    sources: tuple[SourceView, ...]
    missing: tuple[tuple[str, str], ...]
    """(figure, why it is missing) for every figure shown as "—"."""
