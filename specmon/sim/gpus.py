"""Simulated GPUs: the simulator's `/gpu-metrics`, in dcgm-exporter's names, written by the
agent's own collector (`specmon.agent.render_metrics`) over `SimConfig.gpus` H200s that are busy
while the engine decodes. What `--gpu-metrics URL/gpu-metrics` reads, so that a fleet of
simulated servers comes with GPUs to watch (benchmarks/fleet_overhead.py)."""

from __future__ import annotations

from specmon.model import GpuDevice, Telemetry

H200_MIB = 143_771
H200_POWER_LIMIT_W = 700.0
H200_SM_MHZ = 1980.0
H200_MEM_MHZ = 3201.0


def simulated_telemetry(count: int, busy: bool, reading: int = 0) -> Telemetry:
    """`count` H200s, all busy (97% utilisation, about 600 W) or all idle; power and
    temperature move from one `reading` to the next, as a real GPU's do (so that no reader
    can get away with reusing the last scrape's parse)."""
    wobble = (reading * 7 + 3) % 11 - 5  # -5 … +5
    gpus = tuple(
        GpuDevice(
            index=i,
            name="NVIDIA H200",
            uuid=f"GPU-5157a000-0000-0000-0000-{i:012d}",
            utilization_pct=97.0 if busy else 0.0,
            memory_used_mib=120_000.0,
            memory_total_mib=float(H200_MIB),
            power_w=(600.0 if busy else 90.0) + wobble + i,
            power_limit_w=H200_POWER_LIMIT_W,
            sm_clock_mhz=H200_SM_MHZ,
            sm_clock_max_mhz=H200_SM_MHZ,
            mem_clock_mhz=H200_MEM_MHZ,
            mem_clock_max_mhz=H200_MEM_MHZ,
            temperature_c=(54.0 if busy else 32.0) + wobble % 3,
            clock_event_mask=0 if busy else 1,  # NVML's "GPU idle" bit
        )
        for i in range(count)
    )
    return Telemetry(
        "dcgm", "simulated GPUs", gpus, hostname="sim", driver_version="570.0 (simulated)"
    )
