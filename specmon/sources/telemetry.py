"""Which telemetry source serves a target: NVML + psutil on the box, DCGM-style from afar.

The choice follows the server's address: loopback or one of this machine's own addresses means
the server runs here, so NVML and psutil read it directly; any other address means the GPUs are
elsewhere, so specmon scrapes port 9400 there (dcgm-exporter's, and `specmon agent`'s), unless
`--gpu-metrics URL` names the endpoint.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Protocol
from urllib.parse import urlsplit

from specmon.model import GpuDevice, GpuSourceKind, Telemetry
from specmon.sources.dcgm import DCGM_PORT, DcgmSource
from specmon.sources.host import HostReading, HostSource, is_local_address
from specmon.sources.nvml import NvmlSource


class TelemetrySource(Protocol):
    """What the sampler, `check`, `bench` and the agent read telemetry through."""

    @property
    def kind(self) -> GpuSourceKind:
        """ "nvml" (this machine) or "dcgm" (an endpoint)."""
        ...

    @property
    def description(self) -> str:
        """Where the readings come from, e.g. "NVML on this machine"."""
        ...

    async def read(self) -> Telemetry:
        """One reading; never blocks the event loop."""
        ...

    async def aclose(self) -> None:
        """Release what the source holds (NVML, an HTTP client)."""
        ...


class LocalTelemetry:
    """NVML and psutil on the machine the server runs on (and the agent's source)."""

    def __init__(self, nvml: NvmlSource, host: HostSource) -> None:
        """Args:
        nvml: The GPUs.
        host: The host and the server process (by its port).
        """
        self.nvml = nvml
        self.host = host

    @property
    def kind(self) -> GpuSourceKind:
        """Always "nvml"."""
        return "nvml"

    @property
    def description(self) -> str:
        """Where the readings come from."""
        return self.nvml.description

    async def read(self) -> Telemetry:
        """Read the GPUs, then the host, in one worker thread: one hand-off to a thread and
        back a reading instead of two (each costs the event loop about what reading the host
        does, ~0.1 ms)."""
        gpus, host = await asyncio.to_thread(self._read_blocking)
        return replace(
            gpus,
            gpus=attribute_processes(gpus.gpus, host.server_pids),
            host=host.host,
            server_process=host.server_process,
            server_process_missing=host.server_process_missing,
        )

    def _read_blocking(self) -> tuple[Telemetry, HostReading]:
        gpus = self.nvml.read_blocking()
        # The server's process tree only marks GPU processes: not scanned when there are none.
        return gpus, self.host.read(tree=any(g.processes for g in gpus.gpus))

    async def aclose(self) -> None:
        """Shut NVML down."""
        await self.nvml.aclose()


class ServerProcessTelemetry:
    """Only the server process on this machine, for a server watched for its restarts alone
    (the baseline server): its start time is the restart signal `check` reads too. No GPUs."""

    def __init__(self, host: HostSource) -> None:
        """Args:
        host: The server process (by its port).
        """
        self.host = host

    @property
    def kind(self) -> GpuSourceKind:
        """Always "nvml" (this machine)."""
        return "nvml"

    @property
    def description(self) -> str:
        """Where the readings come from."""
        return "the server process on this machine"

    async def read(self) -> Telemetry:
        """The server process, in a worker thread."""
        host = await asyncio.to_thread(self.host.read, tree=False)
        return Telemetry(
            kind="nvml",
            source=self.description,
            unavailable="not read: this server is watched for restarts only",
            server_process=host.server_process,
            server_process_missing=host.server_process_missing,
        )

    async def aclose(self) -> None:
        """Nothing is held."""


def attribute_processes(
    gpus: tuple[GpuDevice, ...], server_pids: frozenset[int] | None
) -> tuple[GpuDevice, ...]:
    """Mark each GPU process as the server's or not.

    A process psutil cannot see (no name: gone, or in another pid namespace, as NVML reports
    host pids inside containers) stays unknown, as do all when the server's pids are unknown.
    """
    if server_pids is None:
        return gpus
    marked = []
    for gpu in gpus:
        if gpu.processes is None:
            marked.append(gpu)
            continue
        processes = tuple(
            replace(p, is_server=None if p.name is None else p.pid in server_pids)
            for p in gpu.processes
        )
        marked.append(replace(gpu, processes=processes))
    return tuple(marked)


async def open_telemetry(
    server_url: str, *, gpu_metrics: str | None = None, gpus: bool = True
) -> TelemetrySource:
    """The telemetry source for a server.

    Args:
        server_url: The server's base URL (its host decides local or remote).
        gpu_metrics: A DCGM-style endpoint given by the user (`--gpu-metrics`); it wins.
        gpus: False for a server watched for restarts only: here, its process alone; remote,
            the same endpoint (an agent there reports the process).

    Raises:
        TargetError: `gpu_metrics` is not a usable address.
    """
    if gpu_metrics is not None:
        return DcgmSource(gpu_metrics, explicit=True)
    parts = urlsplit(server_url)
    host = parts.hostname or "localhost"
    if await asyncio.to_thread(is_local_address, host):
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if not gpus:
            return ServerProcessTelemetry(HostSource(port))
        return LocalTelemetry(NvmlSource(), HostSource(port))
    bracketed = f"[{host}]" if ":" in host else host
    return DcgmSource(f"http://{bracketed}:{DCGM_PORT}/metrics", explicit=False)
