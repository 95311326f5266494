"""GPU telemetry from afar: a Prometheus endpoint in dcgm-exporter's names.

Two writers speak it: NVIDIA's dcgm-exporter (port 9400 by default) and `specmon agent`, which
adds the `specmon_*` families below (host CPU and memory, the server process, GPU processes).
One reader serves both, so everything `specmon agent` writes reads back into the same
`Telemetry` that NVML gives on the box itself.

dcgm-exporter's labels (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname`,
`DCGM_FI_DRIVER_VERSION`, and in Kubernetes `container`, `namespace`, `pod`) name the GPU; a GPU
may appear in several series of one field (one per pod, or per MIG instance): the first wins.
A field the exporter does not export is None. Parsing is prometheus-client's, of the wanted
families only, and of the lines that changed since the last scrape (sources/scrape_memo.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from specmon.errors import HttpStatus, MalformedResponse, TargetError, Unreachable
from specmon.model import (
    GpuDevice,
    GpuProcess,
    GpuSourceKind,
    HostStats,
    ProcessStats,
    Telemetry,
)
from specmon.safe_text import safe_text
from specmon.sources.http import get, polling_client
from specmon.sources.metrics import wanted_text
from specmon.sources.scrape_memo import ScrapeMemo
from specmon.target import ApiKey, Target

DCGM_PORT = 9400
"""dcgm-exporter's default port, and `specmon agent`'s."""
AGENT_TOKEN_ENV = "SPECMON_AGENT_TOKEN"
"""The environment variable holding `specmon agent`'s token: the agent reads it by default, and
every GPU source sends it (`Authorization: Bearer`) when it is set."""

# dcgm-exporter's field names (etc/default-counters.csv and DCGM's field list) and units.
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"  # %
FB_USED = "DCGM_FI_DEV_FB_USED"  # MiB, the driver's reserve excluded
FB_FREE = "DCGM_FI_DEV_FB_FREE"  # MiB
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"  # MiB
FB_TOTAL = "DCGM_FI_DEV_FB_TOTAL"  # MiB
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"  # W
ENFORCED_POWER_LIMIT = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"  # W
POWER_MGMT_LIMIT = "DCGM_FI_DEV_POWER_MGMT_LIMIT"  # W, read when the enforced one is absent
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"  # MHz
MEM_CLOCK = "DCGM_FI_DEV_MEM_CLOCK"  # MHz
MAX_SM_CLOCK = "DCGM_FI_DEV_MAX_SM_CLOCK"  # MHz
MAX_MEM_CLOCK = "DCGM_FI_DEV_MAX_MEM_CLOCK"  # MHz
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"  # °C
CLOCKS_EVENT_REASONS = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"  # NVML bitmask (DCGM 3.3+)
CLOCK_THROTTLE_REASONS = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"  # the same, before DCGM 3.3

# specmon agent's own families (docs/gpus.md).
AGENT_INFO = "specmon_agent_info"  # 1, labels version, Hostname
GPU_UNAVAILABLE = "specmon_gpu_unavailable"  # 1, label reason: why the agent reads no GPU
GPU_INFO = "specmon_gpu_info"  # 1 per GPU the agent sees (even one with no other series)
GPU_ERROR = "specmon_gpu_error"  # 1 per GPU that could not be read, label reason
GPU_PROCESS_COUNT = "specmon_gpu_process_count"  # per GPU, when its processes are known
GPU_PROCESS_INFO = "specmon_gpu_process_info"  # 1, labels pid, name, server ("true"/"false")
GPU_PROCESS_MEMORY = "specmon_gpu_process_used_memory_bytes"
GPU_PROCESS_SM_UTIL = "specmon_gpu_process_sm_util_percent"
HOST_CPU_PERCENT = "specmon_host_cpu_percent"
HOST_CPU_COUNT = "specmon_host_cpu_count"
HOST_MEMORY_USED = "specmon_host_memory_used_bytes"
HOST_MEMORY_TOTAL = "specmon_host_memory_total_bytes"
SERVER_PROCESS_INFO = "specmon_server_process_info"  # 1, labels pid, name, port
SERVER_PROCESS_CPU = "specmon_server_process_cpu_percent"
SERVER_PROCESS_RSS = "specmon_server_process_resident_memory_bytes"
SERVER_PROCESS_START = "specmon_server_process_start_time_seconds"
SERVER_PROCESS_MISSING = "specmon_server_process_missing"  # 1, label reason

WANTED = (
    GPU_UTIL, FB_USED, FB_FREE, FB_RESERVED, FB_TOTAL, POWER_USAGE, ENFORCED_POWER_LIMIT,
    POWER_MGMT_LIMIT, SM_CLOCK, MEM_CLOCK, MAX_SM_CLOCK, MAX_MEM_CLOCK, GPU_TEMP,
    CLOCKS_EVENT_REASONS, CLOCK_THROTTLE_REASONS, "specmon_",
)  # fmt: skip
"""The families read (as prefixes: "specmon_" is the agent's). dcgm-exporter's default
counters serve about as many again (XID errors, NVLink, PCIe, ECC, energy): not parsed."""

NO_GPU_HINT = "run `specmon agent` on the GPU box or pass --gpu-metrics URL"
"""How to get GPU readings where there are none."""

# The labels that describe a GPU (not a process, not a pod).
DEVICE_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
DRIVER_LABEL = "DCGM_FI_DRIVER_VERSION"
_GPU_LABELS = (*DEVICE_LABELS, DRIVER_LABEL)
"""The labels a GPU keeps: the first non-empty value of each among its series."""

_MIB = 1024 * 1024


@dataclass(slots=True)
class _Gpu:
    """One GPU's series while parsing: the first value of each field, and its labels."""

    labels: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    values: dict[str, float] = field(default_factory=dict)
    processes: dict[int, dict[str, str]] = field(default_factory=dict)
    process_values: dict[tuple[int, str], float] = field(default_factory=dict)


def telemetry_from_text(text: str, url: str, memo: ScrapeMemo | None = None) -> Telemetry:
    """Read one scrape of a DCGM-style endpoint.

    Args:
        text: The exposition text.
        url: Where it came from (for the description).
        memo: The endpoint's previous scrape, so that only lines that changed are parsed
            (`DcgmSource`).

    Raises:
        MalformedResponse: The text is not Prometheus text format.
    """
    gpus: dict[int, _Gpu] = {}
    single: dict[str, tuple[dict[str, str], float]] = {}  # host-wide families: first sample
    try:
        samples = (memo or ScrapeMemo()).parse(wanted_text(text, ("",), WANTED))
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise MalformedResponse(f"{url} is not Prometheus text format ({exc})") from None
    for sample in samples:
        index = sample.labels.get("gpu", "")
        if index.isdigit():
            _add_gpu_sample(gpus, int(index), sample.name, sample.labels, sample.value)
        else:
            single.setdefault(sample.name, (sample.labels, sample.value))
    agent = single.get(AGENT_INFO)
    source = f"specmon agent at {url}" if agent else f"DCGM exporter at {url}"
    unavailable = single.get(GPU_UNAVAILABLE)
    any_labels = next((g.labels for g in gpus.values()), agent[0] if agent else {})
    return Telemetry(
        kind="dcgm",
        source=source,
        gpus=tuple(_device(i, gpus[i]) for i in sorted(gpus)),
        unavailable=None
        if unavailable is None
        else f"the specmon agent at {url} says: {unavailable[0].get('reason', '?')}",
        hint=None if unavailable is None else "see the agent's log on the GPU box",
        hostname=_label(any_labels, "Hostname"),
        driver_version=_label(any_labels, DRIVER_LABEL),
        host=_host(single),
        server_process=_server_process(single),
        server_process_missing=_label(single.get(SERVER_PROCESS_MISSING, ({}, 0))[0], "reason"),
    )


def _add_gpu_sample(
    gpus: dict[int, _Gpu], index: int, name: str, labels: dict[str, str], value: float
) -> None:
    gpu = gpus.get(index)
    if gpu is None:  # not `setdefault`: it would make a _Gpu for each of the GPU's series
        gpu = gpus[index] = _Gpu()
    if name in (GPU_PROCESS_INFO, GPU_PROCESS_MEMORY, GPU_PROCESS_SM_UTIL):
        pid_text = labels.get("pid", "")
        if pid_text.isdigit():
            pid = int(pid_text)
            if name == GPU_PROCESS_INFO:
                gpu.processes.setdefault(pid, labels)
            else:
                gpu.process_values.setdefault((pid, name), value)
        return
    known = gpu.labels
    if len(known) < len(_GPU_LABELS):  # once each is known, no later series changes it
        for key in _GPU_LABELS:
            if key not in known and (text := labels.get(key)):
                known[key] = text
    if name == GPU_ERROR:
        gpu.error = gpu.error or labels.get("reason") or "unreadable"
    else:
        gpu.values.setdefault(name, value)


def _label(labels: Mapping[str, str], name: str) -> str | None:
    # "" is how an exporter says "unknown"; a value is the endpoint's to choose: safe text.
    value = labels.get(name)
    return safe_text(value) if value else None


def _device(index: int, gpu: _Gpu) -> GpuDevice:
    v = gpu.values.get
    used, free = v(FB_USED), v(FB_FREE)
    total = v(FB_TOTAL)
    if total is None and used is not None and free is not None:
        total = used + free + (v(FB_RESERVED) or 0.0)
    limit = v(ENFORCED_POWER_LIMIT)
    mask = v(CLOCKS_EVENT_REASONS)
    if mask is None:
        mask = v(CLOCK_THROTTLE_REASONS)
    return GpuDevice(
        index=index,
        name=_label(gpu.labels, "modelName"),
        uuid=_label(gpu.labels, "UUID"),
        utilization_pct=v(GPU_UTIL),
        memory_used_mib=used,
        memory_total_mib=total,
        power_w=v(POWER_USAGE),
        power_limit_w=limit if limit is not None else v(POWER_MGMT_LIMIT),
        sm_clock_mhz=v(SM_CLOCK),
        sm_clock_max_mhz=v(MAX_SM_CLOCK),
        mem_clock_mhz=v(MEM_CLOCK),
        mem_clock_max_mhz=v(MAX_MEM_CLOCK),
        temperature_c=v(GPU_TEMP),
        clock_event_mask=None if mask is None else int(mask),
        processes=_processes(gpu) if GPU_PROCESS_COUNT in gpu.values else None,
        error=gpu.error,
    )


def _processes(gpu: _Gpu) -> tuple[GpuProcess, ...]:
    result = []
    for pid, labels in gpu.processes.items():
        memory = gpu.process_values.get((pid, GPU_PROCESS_MEMORY))
        server = labels.get("server", "")
        result.append(
            GpuProcess(
                pid=pid,
                used_memory_mib=None if memory is None else memory / _MIB,
                name=_label(labels, "name"),
                sm_util_pct=gpu.process_values.get((pid, GPU_PROCESS_SM_UTIL)),
                is_server=None if server not in ("true", "false") else server == "true",
            )
        )
    return tuple(result)


def _value(single: Mapping[str, tuple[dict[str, str], float]], name: str) -> float | None:
    entry = single.get(name)
    return None if entry is None else entry[1]


def _integer(value: float | None) -> int | None:
    return None if value is None else int(value)


def _host(single: Mapping[str, tuple[dict[str, str], float]]) -> HostStats | None:
    names = (HOST_CPU_PERCENT, HOST_CPU_COUNT, HOST_MEMORY_USED, HOST_MEMORY_TOTAL)
    if not any(name in single for name in names):
        return None
    return HostStats(
        cpu_percent=_value(single, HOST_CPU_PERCENT),
        cpu_count=_integer(_value(single, HOST_CPU_COUNT)),
        memory_used_bytes=_integer(_value(single, HOST_MEMORY_USED)),
        memory_total_bytes=_integer(_value(single, HOST_MEMORY_TOTAL)),
    )


def _server_process(single: Mapping[str, tuple[dict[str, str], float]]) -> ProcessStats | None:
    info = single.get(SERVER_PROCESS_INFO)
    if info is None or not info[0].get("pid", "").isdigit():
        return None
    labels = info[0]
    port = labels.get("port", "")
    return ProcessStats(
        pid=int(labels["pid"]),
        name=_label(labels, "name"),
        start_time=_value(single, SERVER_PROCESS_START),
        cpu_percent=_value(single, SERVER_PROCESS_CPU),
        rss_bytes=_integer(_value(single, SERVER_PROCESS_RSS)),
        port=int(port) if port.isdigit() else None,
    )


def split_metrics_url(raw: str) -> tuple[str, str]:
    """ "host:9400", "http://host:9400" or "http://host:9400/metrics" → (base URL, path).

    Raises:
        TargetError: Not a usable http(s) address.
    """
    text = raw.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(f"--gpu-metrics: not an http(s) address: {raw!r}")
    try:
        parts.port  # noqa: B018  (validates the port)
    except ValueError:
        raise TargetError(f"--gpu-metrics: bad port in {raw!r}") from None
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return f"{parts.scheme}://{parts.netloc}", path + (f"?{parts.query}" if parts.query else "")


class DcgmSource:
    """GPU telemetry scraped from a DCGM-style endpoint (dcgm-exporter or `specmon agent`).

    When the address was only guessed (the server's host, port 9400), nothing answering there is
    a state ("no GPU metrics at …"), not an error; an address the user gave fails loudly.
    """

    def __init__(
        self, url: str, *, explicit: bool, client: httpx.AsyncClient | None = None
    ) -> None:
        """Args:
        url: The endpoint, e.g. "http://10.1.230.174:9400/metrics" (path defaults to /metrics).
        explicit: The user gave it (`--gpu-metrics`), rather than it being guessed.
        client: An httpx client for its base URL (default: a `polling_client` with specmon's
            timeouts: a fleet reads every GPU endpoint each second).
        """
        base, self._path = split_metrics_url(url)
        self.url = base + self._path
        self.explicit = explicit
        token = os.environ.get(AGENT_TOKEN_ENV, "").strip()
        key = ApiKey(token, f"env {AGENT_TOKEN_ENV}") if token else None
        target = Target(url=base, api_key=key)
        self._client = client or polling_client(target)
        self._memo = ScrapeMemo()

    @property
    def kind(self) -> GpuSourceKind:
        """Always "dcgm"."""
        return "dcgm"

    @property
    def description(self) -> str:
        """Where the readings come from."""
        return f"GPU metrics at {self.url}"

    async def read(self) -> Telemetry:
        """Scrape once.

        Raises:
            SourceError: Only for an explicit address: unreachable, an error status, garbage.
        """
        try:
            response = await get(self._client, self._path)
        except (Unreachable, HttpStatus) as exc:
            if self.explicit:
                raise
            return Telemetry(
                kind="dcgm",
                source=self.description,
                unavailable=f"no GPU metrics at {self.url}: {_reason(exc, self.url)}",
                hint=NO_GPU_HINT,
            )
        try:
            text = response.content.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedResponse(f"{self.url}: the body is not UTF-8") from None
        return telemetry_from_text(text, self.url, self._memo)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()


def _reason(exc: Exception, url: str) -> str:
    text = str(exc)
    return text[len(url) + 2 :] if text.startswith(url + ": ") else text
