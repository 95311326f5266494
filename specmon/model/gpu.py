"""GPU and host telemetry: NVML/DCGM readings, clock event reasons, the GPU state over a bench."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

GpuSourceKind = Literal["nvml", "dcgm"]
"""Where GPU readings come from: NVML on this machine, or a DCGM-style `/metrics` endpoint
(dcgm-exporter, or `specmon agent` on the GPU box)."""

CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "idle"),
    (0x2, "app_clocks"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)
"""NVML's clock event ("throttle") reason bits and their short names. DCGM exports the same mask
as `DCGM_FI_DEV_CLOCKS_EVENT_REASONS` (`…_CLOCK_THROTTLE_REASONS` before DCGM 3.3)."""
_KNOWN_REASONS = sum(bit for bit, _ in CLOCK_EVENT_REASONS)


@functools.lru_cache(maxsize=256)  # a handful of masks occur; a fleet asks thousands of times
def clock_event_names(mask: int) -> tuple[str, ...]:
    """The short names of a clock event reasons mask, unknown bits in hex."""
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    if mask & ~_KNOWN_REASONS:
        names.append(f"0x{mask & ~_KNOWN_REASONS:x}")
    return tuple(names)


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process holding a GPU context."""

    pid: int
    """As the driver reports it (a host pid: in a container it may not be one psutil sees)."""
    used_memory_mib: float | None
    name: str | None = None
    """From psutil, when the process is visible from here."""
    sm_util_pct: float | None = None
    """Its share of SM time in NVML's last sampling window; None when NVML has no sample."""
    is_server: bool | None = None
    """Whether it belongs to the monitored server's process tree; None when that is unknown."""


@dataclass(frozen=True, slots=True)
class GpuDevice:
    """One GPU at one moment. Every field the driver or exporter did not give is None."""

    index: int
    name: str | None = None
    uuid: str | None = None
    utilization_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    """The enforced power limit."""
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    temperature_c: float | None = None
    clock_event_mask: int | None = None
    """NVML's clock event reasons bitmask (see `CLOCK_EVENT_REASONS`)."""
    processes: tuple[GpuProcess, ...] | None = None
    """None when the source does not list processes (dcgm-exporter does not)."""
    error: str | None = None
    """Why this GPU could not be read (e.g. "GPU is lost"); its other fields are then None."""

    @property
    def throttle_reasons(self) -> tuple[str, ...] | None:
        """The clock event reasons by short name ("idle", "sw_power_cap" …); None if unknown."""
        mask = self.clock_event_mask
        return None if mask is None else clock_event_names(mask)


@dataclass(frozen=True, slots=True)
class HostStats:
    """The machine the server runs on."""

    cpu_percent: float | None
    """All CPUs together, 0–100; None on the first reading (psutil needs two)."""
    cpu_count: int | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None


@dataclass(frozen=True, slots=True)
class ProcessStats:
    """The server's process (the one listening on its port)."""

    pid: int
    name: str | None
    start_time: float | None
    """Unix seconds; a new value means the server restarted."""
    cpu_percent: float | None
    """Percent of one CPU (can exceed 100); None on the first reading of this process."""
    rss_bytes: int | None
    port: int | None = None


@dataclass(frozen=True, slots=True)
class Telemetry:
    """One reading of the GPUs, the host and the server process, from one source."""

    kind: GpuSourceKind
    source: str
    """Where it came from, e.g. "NVML on this machine", "specmon agent at http://…/metrics"."""
    gpus: tuple[GpuDevice, ...] = ()
    unavailable: str | None = None
    """Why there are no GPU readings, one line (e.g. "no NVML here (Driver Not Loaded)")."""
    hint: str | None = None
    """How to get GPU readings when they are unavailable."""
    hostname: str | None = None
    driver_version: str | None = None
    host: HostStats | None = None
    server_process: ProcessStats | None = None
    server_process_missing: str | None = None
    """Why `server_process` is None, when it was looked for."""


@dataclass(frozen=True, slots=True)
class GpuState:
    """The GPUs' condition during a bench, kept with its snapshot (`analysis.gpus.gpu_state`).

    Two snapshots taken under different GPU conditions (lower clocks, another power limit,
    throttling, someone else's process on a GPU) do not compare like for like.
    """

    source: str
    gpu_count: int
    gpu_name: str | None = None
    """Short model name(s), e.g. "H200", or "H200, H100" on a mixed box."""
    sm_clock_mhz: float | None = None
    """Median over the samples of the lowest SM clock among the busy (not idle) GPUs."""
    sm_clock_max_mhz: float | None = None
    power_limit_w: float | None = None
    """The lowest enforced power limit."""
    max_temperature_c: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    """Throttling reasons seen on any GPU in any sample (idle and the like excluded)."""
    other_processes: tuple[str, ...] = ()
    """Processes on the GPUs that are not the server's, e.g.
    "python (pid 4242) on GPU 3: 20480 MiB, SM 35%"."""
    samples: int = 0
