"""A fake of the pynvml functions specmon calls (`sources.nvml.NvmlLib`), over GPUs a test
describes and changes between readings. It raises pynvml's real error classes.

It also records whether each call ran on a thread with a running event loop, so tests can show
that NVML is only ever called off the loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml

MIB = 1024 * 1024


@dataclass
class FakeGpu:
    """One GPU's state; change it between readings. Memory in bytes, power in mW, as NVML."""

    name: str = "NVIDIA H200"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    util: int = 97
    mem_used: int = 120_000 * MIB
    mem_reserved: int = 500 * MIB
    mem_total: int = 143_771 * MIB
    power_mw: int = 612_345
    limit_mw: int = 700_000
    sm_clock: int = 1980
    sm_clock_max: int = 1980
    mem_clock: int = 3201
    mem_clock_max: int = 3201
    temperature: int = 54
    reasons: int = 0
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    """(pid, used bytes or None) of compute processes."""
    utilisation_samples: list[tuple[int, int, int]] = field(default_factory=list)
    """(pid, timestamp µs, SM %) as nvmlDeviceGetProcessUtilization returns them."""
    unsupported: set[str] = field(default_factory=set)
    """Names of NVML functions that raise NotSupported for this GPU."""
    lost: bool = False


def h200s(count: int = 8) -> list[FakeGpu]:
    """`count` busy H200s with distinct UUIDs and slightly different readings."""
    return [
        FakeGpu(
            uuid=f"GPU-{i:08x}-aaaa-bbbb-cccc-{i:012x}",
            util=90 + i,
            power_mw=600_000 + 1_000 * i,
            temperature=50 + i,
            processes=[(40000 + i, (70_000 + i) * MIB)],
        )
        for i in range(count)
    ]


class FakeNvml:
    """Implements `NvmlLib` over `FakeGpu`s."""

    NVMLError = pynvml.NVMLError
    NVMLError_GpuIsLost = pynvml.NVMLError_GpuIsLost
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM
    NVML_CLOCK_MEM = pynvml.NVML_CLOCK_MEM
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    nvmlMemory_v2 = pynvml.nvmlMemory_v2

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        init_error: type[Exception] | None = None,
        driver: str = "570.124.06",
    ) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.driver = driver
        self.init_calls = 0
        self.shutdown_calls = 0
        self.calls_on_loop = 0
        self.calls = 0

    def _call(self) -> None:
        self.calls += 1
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self.calls_on_loop += 1

    def _gpu(self, handle: int, function: str) -> FakeGpu:
        self._call()
        gpu = self.gpus[handle]
        if gpu.lost:
            raise pynvml.NVMLError_GpuIsLost()
        if function in gpu.unsupported:
            raise pynvml.NVMLError_NotSupported()
        return gpu

    def nvmlInit(self) -> None:
        self._call()
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error()

    def nvmlShutdown(self) -> None:
        self._call()
        self.shutdown_calls += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._call()
        return self.driver

    def nvmlDeviceGetCount(self) -> int:
        self._call()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._call()
        if index >= len(self.gpus):
            raise pynvml.NVMLError_InvalidArgument()
        return index

    def nvmlDeviceGetName(self, handle: int) -> str:
        return self._gpu(handle, "nvmlDeviceGetName").name

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        return self._gpu(handle, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Any:
        gpu = self._gpu(handle, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=gpu.util, memory=gpu.util // 2)

    def nvmlDeviceGetMemoryInfo(self, handle: int, version: int | None = None) -> Any:
        gpu = self._gpu(handle, "nvmlDeviceGetMemoryInfo")
        if version is None:  # v1 counts the driver's reserve as used
            used = gpu.mem_used + gpu.mem_reserved
            return SimpleNamespace(total=gpu.mem_total, used=used, free=gpu.mem_total - used)
        free = gpu.mem_total - gpu.mem_used - gpu.mem_reserved
        return SimpleNamespace(
            version=version,
            total=gpu.mem_total,
            reserved=gpu.mem_reserved,
            used=gpu.mem_used,
            free=free,
        )

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        return self._gpu(handle, "nvmlDeviceGetPowerUsage").power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: int) -> int:
        return self._gpu(handle, "nvmlDeviceGetEnforcedPowerLimit").limit_mw

    def nvmlDeviceGetClockInfo(self, handle: int, clock: int) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetClockInfo")
        return gpu.sm_clock if clock == pynvml.NVML_CLOCK_SM else gpu.mem_clock

    def nvmlDeviceGetMaxClockInfo(self, handle: int, clock: int) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetMaxClockInfo")
        return gpu.sm_clock_max if clock == pynvml.NVML_CLOCK_SM else gpu.mem_clock_max

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return self._gpu(handle, "nvmlDeviceGetTemperature").temperature

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: int) -> int:
        return self._gpu(handle, "nvmlDeviceGetCurrentClocksEventReasons").reasons

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[Any]:
        gpu = self._gpu(handle, "nvmlDeviceGetComputeRunningProcesses")
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in gpu.processes]

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: int) -> list[Any]:
        self._gpu(handle, "nvmlDeviceGetGraphicsRunningProcesses")
        return []

    def nvmlDeviceGetProcessUtilization(self, handle: int, since: int) -> list[Any]:
        gpu = self._gpu(handle, "nvmlDeviceGetProcessUtilization")
        samples = [
            SimpleNamespace(pid=pid, timeStamp=stamp, smUtil=sm, memUtil=0)
            for pid, stamp, sm in gpu.utilisation_samples
            if stamp > since
        ]
        if not samples:  # what NVML does when no sample is newer than `since`
            raise pynvml.NVMLError_NotFound()
        return samples
