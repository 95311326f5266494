"""NVML on this machine: every GPU's state, read in a worker thread.

nvitop's pattern: every query is wrapped on its own, so a field that the GPU, the driver or the
permissions do not allow is None (never 0, never a crash), while the other fields still come.
A GPU that falls off the bus ("GPU is lost") is reported with its error instead of its fields.

NVML is initialised once, on the first reading, in the worker thread; `aclose` shuts it down.
No NVML at all (no driver, no GPU, no library) is a state, not an error: the reading says so in
one line and how to get GPU data from afar. Needs a driver of the 535 series or later (clock
event reasons); older ones give None for the fields they lack.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any, Protocol

from specmon.model import GpuDevice, GpuProcess, Telemetry
from specmon.sources.dcgm import NO_GPU_HINT
from specmon.sources.host import process_name

LOCAL_SOURCE = "NVML on this machine"
_MIB = 1024 * 1024


class NvmlLib(Protocol):
    """The part of `pynvml` (nvidia-ml-py) specmon uses: tests inject a fake with the same names.

    The error classes are pynvml's own (`NVMLError` and its per-code subclasses).
    """

    NVMLError: type[Exception]
    NVMLError_GpuIsLost: type[Exception]
    NVML_CLOCK_SM: int
    NVML_CLOCK_MEM: int
    NVML_TEMPERATURE_GPU: int
    nvmlMemory_v2: int

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> str | bytes: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetUUID(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: int = ...) -> Any: ...
    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int: ...
    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int: ...
    def nvmlDeviceGetClockInfo(self, handle: Any, clock: int) -> int: ...
    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock: int) -> int: ...
    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int: ...
    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int: ...
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]: ...
    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Any) -> list[Any]: ...
    def nvmlDeviceGetProcessUtilization(self, handle: Any, since: int) -> list[Any]: ...


def _load_pynvml() -> NvmlLib | str:
    try:
        import pynvml
    except ImportError:
        return "nvidia-ml-py is not installed"
    lib: NvmlLib = pynvml
    return lib


def _text(value: str | bytes | None) -> str | None:
    # nvidia-ml-py returned bytes before 11.5: accept both.
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


class NvmlSource:
    """The GPUs of this machine through NVML.

    Example:
        source = NvmlSource()
        telemetry = await asyncio.to_thread(source.read_blocking)  # kind "nvml", GPUs only
        await source.aclose()
    """

    description = LOCAL_SOURCE

    def __init__(
        self,
        nvml: NvmlLib | None = None,
        *,
        name_of: Callable[[int], str | None] = process_name,
    ) -> None:
        """Args:
        nvml: The NVML bindings (default: `pynvml`, imported on first use).
        name_of: A process's name by pid (default: psutil's).
        """
        self._lib = nvml
        self._name_of = name_of
        self._lock = threading.Lock()
        self._started = False
        self._missing: str | None = None  # why NVML is unavailable, once known
        self._driver: str | None = None
        self._util_seen: dict[int, int] = {}  # per GPU: newest process-utilisation timestamp

    async def aclose(self) -> None:
        """Shut NVML down if it was initialised."""
        await asyncio.to_thread(self._shutdown)

    def read_blocking(self) -> Telemetry:
        """Read every GPU in the calling thread (`LocalTelemetry` calls it in a worker)."""
        lib = self._start()
        if lib is None:
            return self._unavailable(self._missing or "NVML did not start")
        try:
            count = lib.nvmlDeviceGetCount()
        except lib.NVMLError as exc:
            return self._unavailable(f"NVML failed to count the GPUs: {exc}")
        return Telemetry(
            kind="nvml",
            source=LOCAL_SOURCE,
            gpus=tuple(self._device(lib, index) for index in range(count)),
            hostname=socket.gethostname(),
            driver_version=self._driver,
        )

    def _unavailable(self, reason: str) -> Telemetry:
        return Telemetry(
            kind="nvml",
            source=LOCAL_SOURCE,
            unavailable=f"no NVML here ({reason})",
            hint=NO_GPU_HINT,
            hostname=socket.gethostname(),
        )

    def _start(self) -> NvmlLib | None:
        with self._lock:
            if not self._started:
                self._started = True
                self._missing = self._init()
            return None if self._missing is not None else self._lib

    def _init(self) -> str | None:
        if self._lib is None:
            loaded = _load_pynvml()
            if isinstance(loaded, str):
                return loaded
            self._lib = loaded
        lib = self._lib
        try:
            lib.nvmlInit()
        except lib.NVMLError as exc:  # library not found, driver not loaded, version mismatch
            return str(exc)
        self._driver = _text(self._query(lib, lib.nvmlSystemGetDriverVersion))
        return None

    def _shutdown(self) -> None:
        with self._lock:
            if self._started and self._missing is None and self._lib is not None:
                with contextlib.suppress(self._lib.NVMLError):  # nothing left to release
                    self._lib.nvmlShutdown()
            self._started = False
            self._missing = None

    @staticmethod
    def _query(lib: NvmlLib, fn: Callable[..., Any], *args: Any) -> Any:
        """One NVML call: its value, or None when it fails (not supported, no permission …).

        A lost GPU is not one field's problem: that error goes up to `_device`.
        """
        try:
            return fn(*args)
        except lib.NVMLError_GpuIsLost:
            raise
        except lib.NVMLError:
            return None

    def _device(self, lib: NvmlLib, index: int) -> GpuDevice:
        try:
            handle = lib.nvmlDeviceGetHandleByIndex(index)
            return self._read_device(lib, index, handle)
        except lib.NVMLError as exc:  # no handle at all, or the GPU fell off the bus meanwhile
            return GpuDevice(index=index, error=str(exc))

    def _read_device(self, lib: NvmlLib, index: int, handle: Any) -> GpuDevice:
        q = self._query
        util = q(lib, lib.nvmlDeviceGetUtilizationRates, handle)
        # v2 separates the driver's reserved memory from "used", as nvidia-smi and DCGM do.
        memory = q(lib, lib.nvmlDeviceGetMemoryInfo, handle, lib.nvmlMemory_v2) or q(
            lib, lib.nvmlDeviceGetMemoryInfo, handle
        )
        power = q(lib, lib.nvmlDeviceGetPowerUsage, handle)
        limit = q(lib, lib.nvmlDeviceGetEnforcedPowerLimit, handle)
        return GpuDevice(
            index=index,
            name=_text(q(lib, lib.nvmlDeviceGetName, handle)),
            uuid=_text(q(lib, lib.nvmlDeviceGetUUID, handle)),
            utilization_pct=None if util is None else float(util.gpu),
            memory_used_mib=None if memory is None else memory.used / _MIB,
            memory_total_mib=None if memory is None else memory.total / _MIB,
            power_w=None if power is None else power / 1000,  # NVML speaks milliwatts
            power_limit_w=None if limit is None else limit / 1000,
            sm_clock_mhz=_number(q(lib, lib.nvmlDeviceGetClockInfo, handle, lib.NVML_CLOCK_SM)),
            sm_clock_max_mhz=_number(
                q(lib, lib.nvmlDeviceGetMaxClockInfo, handle, lib.NVML_CLOCK_SM)
            ),
            mem_clock_mhz=_number(q(lib, lib.nvmlDeviceGetClockInfo, handle, lib.NVML_CLOCK_MEM)),
            mem_clock_max_mhz=_number(
                q(lib, lib.nvmlDeviceGetMaxClockInfo, handle, lib.NVML_CLOCK_MEM)
            ),
            temperature_c=_number(
                q(lib, lib.nvmlDeviceGetTemperature, handle, lib.NVML_TEMPERATURE_GPU)
            ),
            clock_event_mask=q(lib, lib.nvmlDeviceGetCurrentClocksEventReasons, handle),
            processes=self._processes(lib, index, handle),
        )

    def _processes(self, lib: NvmlLib, index: int, handle: Any) -> tuple[GpuProcess, ...] | None:
        compute = self._query(lib, lib.nvmlDeviceGetComputeRunningProcesses, handle)
        graphics = self._query(lib, lib.nvmlDeviceGetGraphicsRunningProcesses, handle)
        if compute is None and graphics is None:
            return None
        sm_util = self._process_utilisation(lib, index, handle)
        seen: dict[int, GpuProcess] = {}
        for info in [*(compute or ()), *(graphics or ())]:
            pid = int(info.pid)
            if pid in seen:
                continue
            used = info.usedGpuMemory  # None when the driver cannot say
            seen[pid] = GpuProcess(
                pid=pid,
                used_memory_mib=None if used is None else used / _MIB,
                name=self._name_of(pid),
                sm_util_pct=sm_util.get(pid),
            )
        return tuple(seen.values())

    def _process_utilisation(self, lib: NvmlLib, index: int, handle: Any) -> dict[int, float]:
        """Each process's SM share in the samples NVML took since the last reading."""
        since = self._util_seen.get(index, 0)
        samples = self._query(lib, lib.nvmlDeviceGetProcessUtilization, handle, since)
        latest: dict[int, tuple[int, float]] = {}
        for sample in samples or ():  # NVML raises "Not Found" when there is no new sample
            stamp, pid = int(sample.timeStamp), int(sample.pid)
            if pid not in latest or stamp > latest[pid][0]:
                latest[pid] = (stamp, float(sample.smUtil))
        if latest:
            self._util_seen[index] = max(stamp for stamp, _ in latest.values())
        return {pid: util for pid, (_, util) in latest.items()}


def _number(value: int | None) -> float | None:
    return None if value is None else float(value)
