"""Frozen dataclasses shared by every layer: what sources return and what analysis derives.

Missing data is `None`, never 0: an absent metric family, a server that does not say, a figure
that cannot be computed (docs/design.md §4). One module per domain: `server` (what a server says
about itself), `metrics` (its /metrics), `probe` (a probe run and its figures), `gpu` (GPU and
host telemetry), `snapshot` (a completed bench), `sample` (the sampler's tick); every public name
is here, so `from specmon.model import X` is the one way in.
"""

from specmon.model.gpu import (
    CLOCK_EVENT_REASONS,
    GpuDevice,
    GpuProcess,
    GpuSourceKind,
    GpuState,
    HostStats,
    ProcessStats,
    Telemetry,
    clock_event_names,
)
from specmon.model.metrics import (
    Histogram,
    ServerMetrics,
    WorkerStatus,
)
from specmon.model.probe import (
    AcceptSource,
    CycleBasis,
    PositionSource,
    ProbeChunk,
    ProbeResult,
    RunConditions,
    RunFigures,
    Stats,
    StepsSource,
)
from specmon.model.sample import (
    Reading,
    Sample,
    SourceName,
)
from specmon.model.server import (
    UNKNOWN_METHOD,
    ServerInfo,
    SpecConfig,
    server_title,
)
from specmon.model.snapshot import (
    Lifetime,
    Protocol,
    Snapshot,
)

__all__ = [
    "CLOCK_EVENT_REASONS",
    "UNKNOWN_METHOD",
    "AcceptSource",
    "CycleBasis",
    "GpuDevice",
    "GpuProcess",
    "GpuSourceKind",
    "GpuState",
    "Histogram",
    "HostStats",
    "Lifetime",
    "PositionSource",
    "ProbeChunk",
    "ProbeResult",
    "ProcessStats",
    "Protocol",
    "Reading",
    "RunConditions",
    "RunFigures",
    "Sample",
    "ServerInfo",
    "ServerMetrics",
    "Snapshot",
    "SourceName",
    "SpecConfig",
    "Stats",
    "StepsSource",
    "Telemetry",
    "WorkerStatus",
    "clock_event_names",
    "server_title",
]
