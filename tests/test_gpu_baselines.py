"""GPU state in baselines: recorded by the bench, stored, compared, and `check`'s GPU line."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import pytest

from specmon.analysis.validity import LifetimeCheck, LifetimeState, snapshot_validity
from specmon.check import run_check
from specmon.cli import main
from specmon.errors import Unreachable
from specmon.measure.bench import run_bench
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import GpuDevice, GpuState, Protocol, RunFigures, Snapshot, Telemetry
from specmon.reports.check_report import EXIT_HEALTHY, CheckReport
from specmon.reports.compare_report import compare_text
from specmon.sim import SimConfig, SimServer
from specmon.sources.backends import Connection
from specmon.storage.serialize import RecordError, snapshot_from_record, snapshot_to_record
from specmon.target import Target

FAST = SimConfig(plain_step_ms=2.0, cycle_ms=4.0, accept_length=2.1, ttft_ms=5.0, seed=3)
PROTOCOL = Protocol(runs=2, warmup=0, max_tokens=40, temperature=0.0, prompt="p")
BUSY = GpuDevice(
    0,
    name="NVIDIA H200",
    sm_clock_mhz=1980.0,
    sm_clock_max_mhz=1980.0,
    power_limit_w=700.0,
    temperature_c=55.0,
    clock_event_mask=0,
    utilization_pct=95.0,
)
SAME = LifetimeCheck(LifetimeState.SAME, "the same server process")
NO_NVML = Telemetry(
    "nvml",
    "NVML on this machine",
    unavailable="no NVML here (NVML Shared Library Not Found)",
    hint="run `specmon agent` on the GPU box or pass --gpu-metrics URL",
)


@pytest.fixture
async def sim() -> AsyncIterator[tuple[SimServer, httpx.AsyncClient]]:
    server = SimServer(FAST)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=10.0) as client:
        yield server, client
    await server.stop()


class Readings:
    """A GPU reader that counts its calls, or fails them."""

    def __init__(self, telemetry: Telemetry | None) -> None:
        self.telemetry = telemetry
        self.calls = 0

    async def __call__(self) -> Telemetry:
        self.calls += 1
        if self.telemetry is None:
            raise Unreachable("http://gpu-box:9400/metrics: connection refused")
        return self.telemetry


async def test_bench_records_the_gpu_state(sim: tuple[SimServer, httpx.AsyncClient]) -> None:
    server, client = sim
    connection = Connection(client)
    info = await connection.info()
    reader = Readings(Telemetry("nvml", "NVML on this machine", gpus=(BUSY,)))
    snapshot = await run_bench(
        connection, server.url, info, PROTOCOL, gpu_state=reader, gpu_every=0.01
    )
    assert reader.calls >= 2  # before and after the runs, and during them
    assert snapshot.gpu == GpuState(
        source="NVML on this machine",
        gpu_count=1,
        gpu_name="H200",
        sm_clock_mhz=1980.0,
        sm_clock_max_mhz=1980.0,
        power_limit_w=700.0,
        max_temperature_c=55.0,
        samples=reader.calls,
    )


@pytest.mark.slow
async def test_gpu_failures_never_fail_a_bench(sim: tuple[SimServer, httpx.AsyncClient]) -> None:
    server, client = sim
    connection = Connection(client)
    info = await connection.info()
    failing = Readings(None)
    snapshot = await run_bench(connection, server.url, info, PROTOCOL, gpu_state=failing)
    assert failing.calls >= 2
    assert snapshot.gpu is None
    assert len(snapshot.runs) == 2
    plain = await run_bench(connection, server.url, info, PROTOCOL)
    assert plain.gpu is None


async def _check(client: httpx.AsyncClient, url: str, gpu: Readings) -> CheckReport:
    async def probe(protocol: Protocol) -> Snapshot:
        return await take_snapshot(Target(url), protocol, kind=SnapshotKind.RUN)

    async def lifetime(_baseline: Snapshot) -> LifetimeCheck:
        raise AssertionError("no baseline here")

    return await run_check(
        Connection(client), url, run_probe=probe, check_lifetime=lifetime, probe_tokens=20, gpu=gpu
    )


@pytest.mark.slow
async def test_check_says_no_nvml_and_stays_healthy(
    sim: tuple[SimServer, httpx.AsyncClient],
) -> None:
    server, client = sim
    report = await _check(client, server.url, Readings(NO_NVML))
    assert report.exit_code == EXIT_HEALTHY
    gpu_lines = [f for f in report.findings if f.text.startswith("GPUs:")]
    assert [(f.level, f.text) for f in gpu_lines] == [
        (
            "info",
            "GPUs: no NVML here (NVML Shared Library Not Found); "
            "run `specmon agent` on the GPU box or pass --gpu-metrics URL",
        )
    ]
    report = await _check(client, server.url, Readings(None))
    assert report.exit_code == EXIT_HEALTHY
    assert [(f.level, f.text) for f in report.findings if f.text.startswith("GPUs:")] == [
        ("warn", "GPUs: http://gpu-box:9400/metrics: connection refused")
    ]
    eight = Telemetry(
        "nvml", "NVML on this machine", gpus=tuple(replace(BUSY, index=i) for i in range(8))
    )
    report = await _check(client, server.url, Readings(eight))
    assert "GPUs: 8 × H200, max util 95%, no throttling (NVML on this machine)" in [
        f.text for f in report.findings
    ]


def test_cli_check_on_a_machine_without_nvml(
    empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has NVML")
    from specmon.sim import SimThread

    with SimThread(FAST) as thread:
        code = main(["check", thread.url, "--db", empty_db, "--probe-tokens", "20"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0, lines
    (gpu_line,) = [line for line in lines if "GPUs:" in line]
    assert gpu_line.startswith("· GPUs: no NVML here (")
    assert gpu_line.endswith("; run `specmon agent` on the GPU box or pass --gpu-metrics URL")


RUN = RunFigures(40, 1, 8.0, 0.09, 440.0, 468.0, 1.9, 1.9, 21, 4.0, 3.6, 4.6)
BASE_STATE = GpuState("NVML on this machine", 8, "H200", 1980.0, 1980.0, 700.0, 60.0, (), (), 20)


async def test_records_keep_gpu_state_and_old_ones_still_load(
    sim: tuple[SimServer, httpx.AsyncClient],
) -> None:
    server, client = sim
    connection = Connection(client)
    info = await connection.info()
    snapshot = await run_bench(connection, server.url, info, PROTOCOL)
    snapshot = replace(snapshot, runs=(RUN,))
    with_gpu = replace(snapshot, gpu=replace(BASE_STATE, throttle_reasons=("sw_power_cap",)))
    record = json.loads(json.dumps(snapshot_to_record(with_gpu)))
    assert snapshot_from_record(record) == with_gpu
    old = {k: v for k, v in record.items() if k != "gpu"}  # written before GPU state existed
    assert snapshot_from_record(old) == replace(with_gpu, gpu=None)
    record["gpu"]["throttle_reasons"] = "sw_power_cap"
    with pytest.raises(
        RecordError, match=r"record\.gpu\.throttle_reasons: expected a list of strings"
    ):
        snapshot_from_record(record)


async def test_comparison_warns_about_gpu_differences(
    sim: tuple[SimServer, httpx.AsyncClient],
) -> None:
    server, client = sim
    connection = Connection(client)
    info = await connection.info()
    spec = await run_bench(connection, server.url, info, PROTOCOL)
    plain_info = replace(info, speculative=None)
    base = replace(spec, server=plain_info, gpu=BASE_STATE, created_at=spec.created_at - 60)
    run = replace(
        spec,
        gpu=replace(
            BASE_STATE,
            sm_clock_mhz=1683.0,
            other_processes=("python (pid 4242) on GPU 3: 20480 MiB, SM 35%",),
        ),
    )
    validity = snapshot_validity(base, run, max_age_s=1800, lifetime=SAME)
    assert validity.valid  # GPU differences are warnings, not reasons
    assert validity.warnings == (
        "SM clock under load 15% lower in the run (1683 vs 1980 MHz)",
        "other processes on the GPUs during the run: python (pid 4242) on GPU 3: 20480 MiB, SM 35%",
    )
    text = compare_text(base, run, max_age_s=1800, lifetime=SAME)
    lines = text.splitlines()
    assert "GPU WARNING: SM clock under load 15% lower in the run (1683 vs 1980 MHz)" in lines
    assert (
        lines.index("GPU WARNING: SM clock under load 15% lower in the run (1683 vs 1980 MHz)") == 3
    )
    same = compare_text(base, replace(run, gpu=BASE_STATE), max_age_s=1800, lifetime=SAME)
    assert "GPU WARNING" not in same
