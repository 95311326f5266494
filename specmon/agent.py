"""`specmon agent`: a small exporter on the GPU box, so a workstation can see its GPUs.

It serves, at `/metrics`, what NVML and psutil read on the box, in dcgm-exporter's names (so any
Prometheus or specmon reads it like dcgm-exporter) plus `specmon_*` families for the host, the
server process and the GPU processes (docs/gpus.md). Each scrape reads afresh, off the event
loop. `sources.dcgm.telemetry_from_text` reads it back into the same `Telemetry`.

The exposition text is written by prometheus-client (a custom collector over one `Telemetry`).

What it serves (host name, GPU UUIDs, other users' processes) is nobody else's business: it
listens on loopback unless told otherwise, every request must name one of this machine's hosts
(`specmon.web_hosts`: a page on a rebound DNS name cannot read it through a browser), and with a
token every request must carry it (`Authorization: Bearer TOKEN`, as Prometheus's
`authorization` block and specmon's GPU source send it).
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Iterator, Mapping
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from specmon import __version__
from specmon.errors import SpecmonError
from specmon.listen import listen
from specmon.model import GpuDevice, Telemetry
from specmon.sources import dcgm
from specmon.sources.telemetry import TelemetrySource
from specmon.web_hosts import LOOPBACK_NAMES, names_this_host

# The classic text format: what dcgm-exporter serves and every scraper reads.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_MIB = 1024 * 1024
READ_TIMEOUT_S = 3.0
"""How long a scrape waits for NVML and psutil before answering 503 (a hung driver call); under
specmon's own read timeout (5 s), so that a scraper hears why."""

# (metric, help, GpuDevice field): the units are the same on both sides.
_GPU_FIELDS: tuple[tuple[str, str, str], ...] = (
    (dcgm.GPU_UTIL, "GPU utilization (in %).", "utilization_pct"),
    (dcgm.FB_USED, "Framebuffer memory used (in MiB).", "memory_used_mib"),
    (dcgm.FB_TOTAL, "Framebuffer memory total (in MiB).", "memory_total_mib"),
    (dcgm.POWER_USAGE, "Power draw (in W).", "power_w"),
    (dcgm.ENFORCED_POWER_LIMIT, "Enforced power limit (in W).", "power_limit_w"),
    (dcgm.SM_CLOCK, "SM clock frequency (in MHz).", "sm_clock_mhz"),
    (dcgm.MAX_SM_CLOCK, "Maximum SM clock frequency (in MHz).", "sm_clock_max_mhz"),
    (dcgm.MEM_CLOCK, "Memory clock frequency (in MHz).", "mem_clock_mhz"),
    (dcgm.MAX_MEM_CLOCK, "Maximum memory clock frequency (in MHz).", "mem_clock_max_mhz"),
    (dcgm.GPU_TEMP, "GPU temperature (in C).", "temperature_c"),
    (dcgm.CLOCKS_EVENT_REASONS, "Clock event reasons (NVML bitmask).", "clock_event_mask"),
)


class AgentError(SpecmonError):
    """The agent could not start (the port is taken, the address is not this machine's)."""


class _TelemetryCollector(Collector):
    """prometheus-client collector over one reading."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.t = telemetry

    def collect(self) -> Iterator[Metric]:
        t = self.t
        agent_labels = {"version": __version__, "Hostname": t.hostname}
        yield _single(dcgm.AGENT_INFO, "specmon agent.", 1, agent_labels)
        if t.unavailable is not None:
            reason = {"reason": t.unavailable}
            yield _single(dcgm.GPU_UNAVAILABLE, "Why the agent reads no GPU.", 1, reason)
        present = Metric(dcgm.GPU_INFO, "A GPU the agent sees.", "gauge")
        for gpu in t.gpus:
            present.add_sample(dcgm.GPU_INFO, _gpu_labels(t, gpu), 1)
        if present.samples:
            yield present
        yield from self._gpus()
        yield from self._host()

    def _gpus(self) -> Iterator[Metric]:
        t = self.t
        for name, help_text, attribute in _GPU_FIELDS:
            metric = Metric(name, help_text, "gauge")
            for gpu in t.gpus:
                value = getattr(gpu, attribute)
                if value is not None and gpu.error is None:
                    metric.add_sample(name, _gpu_labels(t, gpu), float(value))
            if metric.samples:  # like dcgm-exporter, no family for a field no GPU gives
                yield metric
        errors = Metric(dcgm.GPU_ERROR, "A GPU that could not be read.", "gauge")
        count = Metric(dcgm.GPU_PROCESS_COUNT, "Processes on the GPU (when known).", "gauge")
        info = Metric(dcgm.GPU_PROCESS_INFO, "A process on a GPU.", "gauge")
        memory = Metric(dcgm.GPU_PROCESS_MEMORY, "GPU memory a process uses.", "gauge")
        sm_util = Metric(dcgm.GPU_PROCESS_SM_UTIL, "A process's share of SM time.", "gauge")
        for gpu in t.gpus:
            labels = _gpu_labels(t, gpu)
            if gpu.error is not None:
                errors.add_sample(dcgm.GPU_ERROR, {**labels, "reason": gpu.error}, 1)
            if gpu.processes is None:
                continue
            count.add_sample(dcgm.GPU_PROCESS_COUNT, labels, len(gpu.processes))
            for p in gpu.processes:
                server = "" if p.is_server is None else str(p.is_server).lower()
                process = {**labels, "pid": str(p.pid)}
                info.add_sample(
                    dcgm.GPU_PROCESS_INFO, {**process, "name": p.name or "", "server": server}, 1
                )
                if p.used_memory_mib is not None:
                    memory.add_sample(dcgm.GPU_PROCESS_MEMORY, process, p.used_memory_mib * _MIB)
                if p.sm_util_pct is not None:
                    sm_util.add_sample(dcgm.GPU_PROCESS_SM_UTIL, process, p.sm_util_pct)
        yield from (m for m in (errors, count, info, memory, sm_util) if m.samples)

    def _host(self) -> Iterator[Metric]:
        host, proc = self.t.host, self.t.server_process
        if host is not None:
            for name, help_text, value in (
                (dcgm.HOST_CPU_PERCENT, "Host CPU use, all CPUs (0-100).", host.cpu_percent),
                (dcgm.HOST_CPU_COUNT, "Logical CPUs.", host.cpu_count),
                (dcgm.HOST_MEMORY_USED, "Host memory in use (bytes).", host.memory_used_bytes),
                (dcgm.HOST_MEMORY_TOTAL, "Host memory (bytes).", host.memory_total_bytes),
            ):
                if value is not None:
                    yield _single(name, help_text, value)
        if self.t.server_process_missing is not None:
            yield _single(
                dcgm.SERVER_PROCESS_MISSING,
                "Why the server process is not known.",
                1,
                {"reason": self.t.server_process_missing},
            )
        if proc is None:
            return
        port = "" if proc.port is None else str(proc.port)
        labels = {"pid": str(proc.pid), "name": proc.name, "port": port}
        yield _single(dcgm.SERVER_PROCESS_INFO, "The server process.", 1, labels)
        for name, help_text, number in (
            (dcgm.SERVER_PROCESS_CPU, "Server process CPU (% of one CPU).", proc.cpu_percent),
            (dcgm.SERVER_PROCESS_RSS, "Server process resident memory (bytes).", proc.rss_bytes),
            (dcgm.SERVER_PROCESS_START, "Server process start (unix seconds).", proc.start_time),
        ):
            if number is not None:
                yield _single(name, help_text, number)


def _gpu_labels(t: Telemetry, gpu: GpuDevice) -> dict[str, str]:
    """dcgm-exporter's label set (empty where unknown, as dcgm-exporter does)."""
    return {
        "gpu": str(gpu.index),
        "UUID": gpu.uuid or "",
        "device": f"nvidia{gpu.index}",
        "modelName": gpu.name or "",
        "Hostname": t.hostname or "",
        dcgm.DRIVER_LABEL: t.driver_version or "",
    }


def _single(
    name: str, help_text: str, value: float, labels: Mapping[str, str | None] | None = None
) -> Metric:
    metric = Metric(name, help_text, "gauge")
    metric.add_sample(name, {k: v or "" for k, v in (labels or {}).items()}, float(value))
    return metric


def _retrieve(task: asyncio.Task[Telemetry]) -> None:
    """Mark a reading's failure as seen (every waiter may have timed out before it came)."""
    if not task.cancelled():
        task.exception()


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=f"specmon agent: {text}\n")


def render_metrics(telemetry: Telemetry) -> bytes:
    """The exposition text of one reading."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_TelemetryCollector(telemetry))
    return generate_latest(registry)


class Agent:
    """The agent's HTTP server (aiohttp) on one address.

    Example:
        agent = Agent(LocalTelemetry(NvmlSource(), HostSource(30000)), "127.0.0.1", 9400)
        await agent.start()
        ...
        await agent.stop()
    """

    def __init__(
        self,
        telemetry: TelemetrySource,
        host: str,
        port: int,
        *,
        read_timeout: float = READ_TIMEOUT_S,
        token: str | None = None,
        hosts: frozenset[str] = LOOPBACK_NAMES,
    ) -> None:
        """Args:
        telemetry: What to serve (read afresh at every scrape).
        host: Address to listen on.
        port: TCP port (0 picks a free one).
        read_timeout: Seconds a scrape waits for a reading before answering 503.
        token: Asked of every request (`Authorization: Bearer`) when not None.
        hosts: The host names a request's Host may name (`web_hosts.allowed_hosts`).
        """
        self.telemetry = telemetry
        self.host = host
        self.port = port
        self.read_timeout = read_timeout
        self.token = token
        self.hosts = hosts
        self._runner: web.AppRunner | None = None
        self._reading: asyncio.Task[Telemetry] | None = None

    @property
    def url(self) -> str:
        """The metrics URL (valid once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    async def start(self) -> None:
        """Listen.

        Raises:
            AgentError: The address cannot be bound.
        """
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/", self._index)
        self._runner, self.port = await listen(
            app,
            self.host,
            self.port,
            error=AgentError,
            hint="(dcgm-exporter may hold it: pass --port)",
        )

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """This machine's names only, and the token when there is one."""
        if not names_this_host(request.headers.get("Host", ""), self.hosts):
            return _plain(403, "not served under this host name (--allow-host NAME adds one)")
        if self.token is not None:
            given = request.headers.get("Authorization", "")
            expected = f"Bearer {self.token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                answer = _plain(401, "this agent asks for its token (Authorization: Bearer)")
                answer.headers["WWW-Authenticate"] = "Bearer"
                return answer
        response: web.StreamResponse = await handler(request)
        return response

    async def _metrics(self, _: web.Request) -> web.StreamResponse:
        # One reading at a time, shared by concurrent scrapes: a hung NVML call then holds one
        # thread, not one per scrape, and every scrape still gets an answer in time.
        if self._reading is None or self._reading.done():
            self._reading = asyncio.create_task(self.telemetry.read())
            self._reading.add_done_callback(_retrieve)
        try:
            telemetry = await asyncio.wait_for(asyncio.shield(self._reading), self.read_timeout)
        except TimeoutError:
            return _plain(
                503, f"reading the GPUs took longer than {self.read_timeout:g} s (NVML hung?)"
            )
        except Exception as exc:  # a failing reader must not take the endpoint down
            return _plain(500, f"cannot read the GPUs and host: {exc!r}")
        body = render_metrics(telemetry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def _index(self, _: web.Request) -> web.StreamResponse:
        return web.Response(
            text=f"specmon agent {__version__}: GPU, host and server-process metrics at /metrics\n"
        )
