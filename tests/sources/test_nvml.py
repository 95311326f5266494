"""NVML source over the fake NVML: 8 GPUs, unsupported fields, a lost GPU, throttling, no NVML."""

from __future__ import annotations

import pynvml
import pytest
from fake_nvml import MIB, FakeGpu, FakeNvml, h200s

from specmon.model import GpuDevice, GpuProcess
from specmon.sources.dcgm import NO_GPU_HINT
from specmon.sources.host import HostSource
from specmon.sources.nvml import NvmlSource
from specmon.sources.telemetry import LocalTelemetry


def _names(pid: int) -> str | None:
    return {40000: "sglang::scheduler", 4242: "python"}.get(pid)


async def test_eight_gpus_every_field() -> None:
    nvml = FakeNvml(h200s(8))
    source = NvmlSource(nvml, name_of=_names)
    telemetry = source.read_blocking()
    assert telemetry.kind == "nvml"
    assert telemetry.source == "NVML on this machine"
    assert telemetry.unavailable is None
    assert telemetry.driver_version == "570.124.06"
    assert [g.index for g in telemetry.gpus] == list(range(8))
    assert telemetry.gpus[0] == GpuDevice(
        index=0,
        name="NVIDIA H200",
        uuid="GPU-00000000-aaaa-bbbb-cccc-000000000000",
        utilization_pct=90.0,
        memory_used_mib=120_000.0,  # v2: the driver's 500 MiB reserve is not "used"
        memory_total_mib=143_771.0,
        power_w=600.0,
        power_limit_w=700.0,
        sm_clock_mhz=1980.0,
        sm_clock_max_mhz=1980.0,
        mem_clock_mhz=3201.0,
        mem_clock_max_mhz=3201.0,
        temperature_c=50.0,
        clock_event_mask=0,
        processes=(GpuProcess(40000, 70_000.0, "sglang::scheduler"),),
    )
    assert telemetry.gpus[7].power_w == 607.0
    assert telemetry.gpus[7].processes == (GpuProcess(40007, 70_007.0, None),)
    assert telemetry.gpus[0].throttle_reasons == ()


async def test_sampling_runs_off_the_event_loop_and_inits_once() -> None:
    nvml = FakeNvml(h200s(8))
    source = NvmlSource(nvml, name_of=_names)
    telemetry = LocalTelemetry(source, HostSource(None))  # the dashboard's and agent's reader
    for _ in range(3):
        await telemetry.read()
    assert nvml.calls > 8 * 3 * 10
    assert nvml.calls_on_loop == 0
    assert nvml.init_calls == 1
    await source.aclose()
    assert nvml.shutdown_calls == 1


async def test_unsupported_fields_are_none_not_zero() -> None:
    gpu = FakeGpu(
        unsupported={
            "nvmlDeviceGetPowerUsage",
            "nvmlDeviceGetEnforcedPowerLimit",
            "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetGraphicsRunningProcesses",
            "nvmlDeviceGetMaxClockInfo",
        }
    )
    (device,) = NvmlSource(FakeNvml([gpu])).read_blocking().gpus
    assert device.power_w is None
    assert device.power_limit_w is None
    assert device.clock_event_mask is None
    assert device.throttle_reasons is None
    assert device.processes is None
    assert device.sm_clock_max_mhz is None
    assert device.mem_clock_max_mhz is None
    # the rest still comes
    assert device.sm_clock_mhz == 1980.0
    assert device.utilization_pct == 97.0
    assert device.error is None


async def test_memory_falls_back_to_v1_when_v2_is_missing() -> None:
    class OldDriver(FakeNvml):
        def nvmlDeviceGetMemoryInfo(self, handle: int, version: int | None = None) -> object:
            if version is not None:
                raise pynvml.NVMLError_FunctionNotFound()
            return super().nvmlDeviceGetMemoryInfo(handle)

    (device,) = NvmlSource(OldDriver([FakeGpu()])).read_blocking().gpus
    assert device.memory_used_mib == 120_500.0  # v1 counts the reserve as used
    assert device.memory_total_mib == 143_771.0


async def test_a_lost_gpu_and_one_that_disappears() -> None:
    gpus = h200s(8)
    nvml = FakeNvml(gpus)
    source = NvmlSource(nvml, name_of=_names)
    gpus[3].lost = True
    telemetry = source.read_blocking()
    assert telemetry.gpus[3] == GpuDevice(index=3, error="GPU is lost")
    assert all(
        g.error is None and g.name == "NVIDIA H200" for i, g in enumerate(telemetry.gpus) if i != 3
    )
    del gpus[3]  # the driver no longer counts it
    telemetry = source.read_blocking()
    assert len(telemetry.gpus) == 7
    assert all(g.error is None for g in telemetry.gpus)


async def test_throttle_reasons_are_decoded() -> None:
    gpu = FakeGpu(
        reasons=pynvml.nvmlClocksEventReasonSwPowerCap
        | pynvml.nvmlClocksEventReasonHwThermalSlowdown
        | 0x8000,
        sm_clock=1410,
    )
    (device,) = NvmlSource(FakeNvml([gpu])).read_blocking().gpus
    assert device.throttle_reasons == ("sw_power_cap", "hw_thermal", "0x8000")
    idle = FakeGpu(reasons=pynvml.nvmlClocksEventReasonGpuIdle)
    (device,) = NvmlSource(FakeNvml([idle])).read_blocking().gpus
    assert device.throttle_reasons == ("idle",)


async def test_processes_memory_unknown_and_sm_share_since_last_reading() -> None:
    gpu = FakeGpu(
        processes=[(40000, 70_000 * MIB), (4242, None)],
        utilisation_samples=[(40000, 1_000, 88), (40000, 2_000, 91), (4242, 1_500, 7)],
    )
    source = NvmlSource(FakeNvml([gpu]), name_of=_names)
    (device,) = source.read_blocking().gpus
    assert device.processes == (
        GpuProcess(40000, 70_000.0, "sglang::scheduler", sm_util_pct=91.0),
        GpuProcess(4242, None, "python", sm_util_pct=7.0),
    )
    # No sample newer than the last reading: NVML says "Not Found", the share is unknown.
    (device,) = source.read_blocking().gpus
    assert device.processes is not None
    assert [p.sm_util_pct for p in device.processes] == [None, None]
    gpu.utilisation_samples.append((4242, 3_000, 35))
    (device,) = source.read_blocking().gpus
    assert device.processes is not None
    assert [p.sm_util_pct for p in device.processes] == [None, 35.0]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (pynvml.NVMLError_LibraryNotFound, "NVML Shared Library Not Found"),
        (pynvml.NVMLError_DriverNotLoaded, "Driver Not Loaded"),
    ],
)
async def test_no_nvml_is_a_state_not_an_error(error: type[Exception], reason: str) -> None:
    nvml = FakeNvml([], init_error=error)
    source = NvmlSource(nvml)
    for _ in range(2):
        telemetry = source.read_blocking()
        assert telemetry.gpus == ()
        assert telemetry.unavailable == f"no NVML here ({reason})"
        assert telemetry.hint == NO_GPU_HINT
    assert nvml.init_calls == 1
    await source.aclose()
    assert nvml.shutdown_calls == 0


async def test_real_pynvml_without_a_gpu() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has NVML: the no-GPU path is covered by the fake")
    telemetry = NvmlSource().read_blocking()
    assert telemetry.unavailable is not None
    assert telemetry.unavailable.startswith("no NVML here (")
    assert telemetry.hint == "run `specmon agent` on the GPU box or pass --gpu-metrics URL"
