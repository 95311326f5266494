"""GPU summaries, check's verdict line, a bench's GPU state and baseline-vs-run differences."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specmon.analysis.gpus import (
    describe_gpu_state,
    gpu_differences,
    gpu_line,
    gpu_state,
    gpu_verdict,
    gpu_worst,
    summarize_gpus,
)
from specmon.model import GpuDevice, GpuProcess, GpuState, Telemetry

IDLE, POWER_CAP, HW_THERMAL = 0x1, 0x4, 0x40
SERVER = GpuProcess(4100, 70_000.0, "python", 90.0, True)


def h200(index: int, **changes: object) -> GpuDevice:
    base = GpuDevice(
        index=index,
        name="NVIDIA H200",
        uuid=f"GPU-{index}",
        utilization_pct=90.0 + index,
        memory_used_mib=120_000.0,
        memory_total_mib=143_771.0,
        power_w=612.0,
        power_limit_w=700.0,
        sm_clock_mhz=1980.0,
        sm_clock_max_mhz=1980.0,
        mem_clock_mhz=3201.0,
        mem_clock_max_mhz=3201.0,
        temperature_c=50.0 + index,
        clock_event_mask=0,
        processes=(SERVER,),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def nvml(*gpus: GpuDevice) -> Telemetry:
    return Telemetry("nvml", "NVML on this machine", gpus=gpus, driver_version="570.124.06")


EIGHT = tuple(h200(i) for i in range(8))


def test_summary_finds_the_worst_gpus() -> None:
    gpus = list(EIGHT)
    gpus[2] = h200(2, sm_clock_mhz=1650.0, clock_event_mask=POWER_CAP | HW_THERMAL)
    gpus[3] = GpuDevice(3, error="GPU is lost")
    gpus[6] = h200(6, sm_clock_mhz=345.0, clock_event_mask=IDLE, utilization_pct=0.0)
    gpus[5] = h200(5, processes=(SERVER, GpuProcess(4242, 20_480.0, "python", 35.0, False)))
    s = summarize_gpus(gpus)
    assert s.count == 8
    assert s.models == "7 × H200, 1 × ?"  # a lost GPU does not say what it is
    assert (s.max_util_pct, s.busiest) == (97.0, 7)
    assert s.slowest == 2  # the idle GPU 6 has lower clocks, but it is idle
    assert s.throttled == ((2, ("sw_power_cap", "hw_thermal")),)
    assert s.failed == ((3, "GPU is lost"),)
    assert s.other_processes == ((5, GpuProcess(4242, 20_480.0, "python", 35.0, False)),)
    assert s.memory_total_mib == 7 * 143_771.0
    assert s.max_temperature_c == 57.0


def test_verdict_lines() -> None:
    healthy = gpu_verdict(nvml(*EIGHT))
    assert healthy.level == "ok"
    assert healthy.text == (
        "8 × H200, max util 97%, no throttling (NVML on this machine, driver 570.124.06)"
    )
    throttled = gpu_verdict(
        nvml(h200(0, clock_event_mask=POWER_CAP), GpuDevice(1, error="Unknown Error"))
    )
    assert throttled.level == "warn"
    assert throttled.text == (
        "1 × H200, 1 × ?, max util 90%, throttling: GPU 0 sw_power_cap, GPU 1: Unknown Error "
        "(NVML on this machine, driver 570.124.06)"
    )
    other = gpu_verdict(nvml(h200(0, processes=(GpuProcess(4242, 512.0, "python", None, False),))))
    assert other.level == "warn"
    assert "other processes: python (pid 4242) on GPU 0: 512 MiB" in other.text
    dcgm = Telemetry(
        "dcgm", "DCGM exporter at http://h:9400/metrics", gpus=(h200(0, clock_event_mask=None),)
    )
    assert gpu_verdict(dcgm).text == (
        "1 × H200, max util 90%, throttling unknown (DCGM exporter at http://h:9400/metrics)"
    )


def test_verdict_without_gpus_is_information() -> None:
    none_here = Telemetry(
        "nvml",
        "NVML on this machine",
        unavailable="no NVML here (NVML Shared Library Not Found)",
        hint="run `specmon agent` on the GPU box or pass --gpu-metrics URL",
    )
    verdict = gpu_verdict(none_here)
    assert verdict.level == "info"
    assert verdict.text == (
        "no NVML here (NVML Shared Library Not Found); "
        "run `specmon agent` on the GPU box or pass --gpu-metrics URL"
    )
    assert gpu_verdict(nvml()).text == "none (NVML on this machine sees no GPU)"


def test_gpu_line() -> None:
    assert gpu_line(h200(0, clock_event_mask=POWER_CAP)) == (
        "GPU 0 H200 util 90% mem 117.2/140.4 GiB power 612/700 W SM 1980/1980 MHz 50°C sw_power_cap"
    )
    assert gpu_line(GpuDevice(1, name="NVIDIA H200")) == "GPU 1 H200 util — mem — power — SM — — —"
    assert gpu_line(GpuDevice(2, error="GPU is lost")) == "GPU 2 ? error: GPU is lost"
    assert gpu_line(h200(3, clock_event_mask=IDLE)).endswith(" -")


def test_gpu_state_from_bench_readings() -> None:
    before = nvml(
        *(h200(i, clock_event_mask=IDLE, sm_clock_mhz=345.0, utilization_pct=0.0) for i in range(8))
    )
    during = [
        nvml(*(h200(i, sm_clock_mhz=1980.0 - (100.0 if i == 4 else 0.0)) for i in range(8))),
        nvml(*(h200(i, sm_clock_mhz=1900.0 if i == 4 else 1980.0) for i in range(8))),
        nvml(
            *(
                h200(
                    i,
                    clock_event_mask=POWER_CAP if i == 1 else 0,
                    sm_clock_mhz=1700.0 if i == 1 else 1980.0,
                )
                for i in range(8)
            )
        ),
    ]
    foreign = GpuProcess(4242, 1024.0, "python", 5.0, False)
    bigger = GpuProcess(4242, 2048.0, "python", None, False)
    after = nvml(
        *(
            h200(i, processes=(SERVER, bigger if i == 7 else foreign)) if i in (6, 7) else h200(i)
            for i in range(8)
        )
    )
    state = gpu_state([before, *during, after])
    assert state == GpuState(
        source="NVML on this machine",
        gpu_count=8,
        gpu_name="H200",
        sm_clock_mhz=1890.0,  # median of the lowest busy clocks 1880, 1900, 1700, 1980 (idle: none)
        sm_clock_max_mhz=1980.0,
        power_limit_w=700.0,
        max_temperature_c=57.0,
        throttle_reasons=("sw_power_cap",),
        other_processes=(
            "python (pid 4242) on GPU 6: 1024 MiB, SM 5%",
            "python (pid 4242) on GPU 7: 2048 MiB",
        ),
        samples=5,
    )
    assert describe_gpu_state(state) == (
        "8 × H200, SM 1890 MHz under load (max 1980), power limit 700 W, throttling: sw_power_cap, "
        "other processes: python (pid 4242) on GPU 6: 1024 MiB, SM 5%; python (pid 4242) on GPU 7: "
        "2048 MiB (5 samples, NVML on this machine)"
    )


def test_no_gpu_state_without_gpus() -> None:
    unavailable = Telemetry("nvml", "NVML on this machine", unavailable="no NVML here (x)")
    assert gpu_state([unavailable, nvml()]) is None
    assert gpu_state([]) is None


BASE = GpuState("NVML on this machine", 8, "H200", 1980.0, 1980.0, 700.0, 60.0, (), (), 20)


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (BASE, []),
        (replace(BASE, sm_clock_mhz=1950.0), []),  # within 5%
        (
            replace(BASE, sm_clock_mhz=1683.0),
            ["SM clock under load 15% lower in the run (1683 vs 1980 MHz)"],
        ),
        (
            replace(BASE, sm_clock_mhz=None, power_limit_w=500.0),
            ["power limit 700 W in the baseline, 500 W in the run"],
        ),
        (replace(BASE, gpu_count=7), ["8 GPUs in the baseline, 7 in the run"]),
        (replace(BASE, gpu_name="H100"), ["different GPUs: H200 in the baseline, H100 in the run"]),
        (
            replace(BASE, throttle_reasons=("hw_thermal", "sw_power_cap")),
            ["throttling during the run only: hw_thermal, sw_power_cap"],
        ),
        (
            replace(BASE, other_processes=("python (pid 4242) on GPU 3: 20480 MiB, SM 35%",)),
            [
                "other processes on the GPUs during the run: "
                "python (pid 4242) on GPU 3: 20480 MiB, SM 35%"
            ],
        ),
        (None, []),
    ],
)
def test_gpu_differences(run: GpuState | None, expected: list[str]) -> None:
    assert gpu_differences(BASE, run) == expected


def test_differences_on_the_baseline_side() -> None:
    base = replace(
        BASE, throttle_reasons=("sw_power_cap",), other_processes=("x (pid 1) on GPU 0",)
    )
    assert gpu_differences(base, BASE) == [
        "throttling during the baseline only: sw_power_cap",
        "other processes on the GPUs during the baseline: x (pid 1) on GPU 0",
    ]
    assert gpu_differences(None, BASE) == []


def test_the_fleet_cell_is_short_and_names_the_worst_gpu() -> None:
    """A table cell: the worst GPU in a few words; the reasons in full are the verdict's."""
    assert gpu_worst(nvml(*EIGHT)) == "8×H200 97% 57°C"
    long_name = tuple(replace(g, name="NVIDIA H100 80GB HBM3") for g in EIGHT[:4])
    assert gpu_worst(nvml(*long_name)) == "4×H100 93% 53°C"
    throttled = list(EIGHT)
    throttled[2] = h200(2, clock_event_mask=POWER_CAP)
    throttled[5] = h200(5, clock_event_mask=HW_THERMAL)
    assert gpu_worst(nvml(*throttled)) == "GPU 2 throttled +1"
    lost = [*EIGHT[:3], GpuDevice(3, error="GPU is lost"), *throttled[4:]]
    assert gpu_worst(nvml(*lost)) == "GPU 3 failed"  # worse than throttling
    shared = [*EIGHT[:1], h200(1, processes=(GpuProcess(4242, 1.0, "python", 3.0, False),))]
    assert gpu_worst(nvml(*shared)) == "GPU 1 shared"
    none = Telemetry(
        "nvml", "NVML on this machine", unavailable="no NVML here (NVML Shared Library Not Found)"
    )
    assert gpu_worst(none) is None  # "—"; the fleet's detail line says why
