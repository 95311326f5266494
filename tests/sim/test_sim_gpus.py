"""The simulator's GPUs: `/gpu-metrics` in dcgm-exporter's names, read back by specmon's own
DCGM source into 8 busy or idle H200s."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from specmon.analysis.gpus import gpu_verdict
from specmon.sim import SimConfig, SimThread
from specmon.sources.telemetry import open_telemetry


def test_simulated_gpus_read_back_as_dcgm() -> None:
    with SimThread(replace(SimConfig(), gpus=8)) as sim:

        async def read() -> object:
            telemetry = await open_telemetry(sim.url, gpu_metrics=sim.url + "/gpu-metrics")
            try:
                return await telemetry.read()
            finally:
                await telemetry.aclose()

        reading = asyncio.run(read())
    gpus = reading.gpus  # type: ignore[attr-defined]
    assert len(gpus) == 8 and {g.name for g in gpus} == {"NVIDIA H200"}
    assert all(g.utilization_pct == 0.0 for g in gpus)  # idle: no request running
    assert gpu_verdict(reading).text.startswith("8 × H200, max util 0%, no throttling")  # type: ignore[arg-type]
