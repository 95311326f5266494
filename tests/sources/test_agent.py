"""`specmon agent`: what it serves parses back into the same readings (fake NVML, real psutil)."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace

import pynvml
import pytest
from fake_nvml import MIB, FakeNvml, h200s
from hypothesis import given
from hypothesis import strategies as st

from specmon.agent import Agent, render_metrics
from specmon.cli import main
from specmon.model import GpuDevice, GpuProcess, HostStats, ProcessStats, Telemetry
from specmon.safe_text import safe_optional
from specmon.sources.dcgm import DcgmSource, telemetry_from_text
from specmon.sources.host import HostSource
from specmon.sources.nvml import NvmlSource
from specmon.sources.telemetry import LocalTelemetry

URL = "http://gpu-box:9400/metrics"


def _as_remote(t: Telemetry, url: str) -> Telemetry:
    return replace(t, kind="dcgm", source=f"specmon agent at {url}")


def test_rich_reading_round_trips_exactly() -> None:
    gpus = h200s(8)
    gpus[2].reasons = (
        pynvml.nvmlClocksEventReasonSwPowerCap | pynvml.nvmlClocksEventReasonHwSlowdown
    )
    gpus[3].lost = True
    gpus[4].unsupported = {"nvmlDeviceGetPowerUsage", "nvmlDeviceGetComputeRunningProcesses",
                           "nvmlDeviceGetGraphicsRunningProcesses"}  # fmt: skip
    gpus[5].processes = [(40005, None), (4242, 3 * MIB + 17)]
    gpus[5].utilisation_samples = [(4242, 10, 35)]
    local = NvmlSource(FakeNvml(gpus), name_of={4242: "python"}.get).read_blocking()
    marked = tuple(
        replace(g, processes=tuple(replace(p, is_server=p.pid != 4242) for p in g.processes))
        if g.processes
        else g
        for g in local.gpus
    )
    t = replace(
        local,
        gpus=marked,
        hostname="gpu-box",
        host=HostStats(12.5, 128, 77 * 2**30, 2015 * 2**30),
        server_process=ProcessStats(4100, "python3", 1796000000.25, 143.5, 9 * 2**30, 30000),
    )
    back = telemetry_from_text(render_metrics(t).decode(), URL)
    assert back == _as_remote(t, URL)
    assert back.gpus[3] == GpuDevice(index=3, error="GPU is lost")
    assert back.gpus[4].power_w is None and back.gpus[4].processes is None
    assert back.gpus[2].throttle_reasons == ("sw_power_cap", "hw_slowdown")
    assert back.gpus[5].processes == (
        GpuProcess(40005, None, None, None, True),
        GpuProcess(4242, 3 + 17 / MIB, "python", 35.0, False),
    )


def test_no_nvml_on_the_agent_box_round_trips() -> None:
    t = NvmlSource(FakeNvml([], init_error=pynvml.NVMLError_DriverNotLoaded)).read_blocking()
    back = telemetry_from_text(render_metrics(t).decode(), URL)
    assert back.gpus == ()
    assert back.unavailable == f"the specmon agent at {URL} says: no NVML here (Driver Not Loaded)"
    assert back.host is None and back.server_process is None


_figures = st.none() | st.floats(min_value=0, max_value=1e7, allow_nan=False)


@pytest.mark.slow
@given(
    util=_figures,
    used=_figures,
    power=_figures,
    clock=_figures,
    mask=st.none() | st.integers(min_value=0, max_value=2**31),
    name=st.none() | st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30),
)
def test_any_device_round_trips(
    util: float | None,
    used: float | None,
    power: float | None,
    clock: float | None,
    mask: int | None,
    name: str | None,
) -> None:
    device = GpuDevice(
        index=0,
        name=name or None,  # "" is how the exposition says "unknown"
        utilization_pct=util,
        memory_used_mib=used,
        memory_total_mib=used,
        power_w=power,
        sm_clock_mhz=clock,
        clock_event_mask=mask,
    )
    t = Telemetry("nvml", "NVML on this machine", gpus=(device,))
    # A name is the agent's text, shown as safe_text shows it: a control character as its escape.
    shown = replace(device, name=safe_optional(device.name))
    assert telemetry_from_text(render_metrics(t).decode(), URL).gpus == (shown,)


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.fixture
async def agent(listening: int) -> AsyncIterator[tuple[Agent, FakeNvml]]:
    gpus = h200s(8)
    gpus[0].processes = [(os.getpid(), 70_000 * MIB)]  # the "server": this test process
    gpus[1].processes = [(1, 512 * MIB)]  # someone else's (pid 1 is visible everywhere)
    nvml = FakeNvml(gpus)
    telemetry = LocalTelemetry(NvmlSource(nvml), HostSource(listening))
    server = Agent(telemetry, "127.0.0.1", 0)
    await server.start()
    yield server, nvml
    await server.stop()
    await telemetry.aclose()


async def test_agent_over_http_reads_back_like_nvml(agent: tuple[Agent, FakeNvml]) -> None:
    server, nvml = agent
    remote = DcgmSource(server.url, explicit=True)
    try:
        t = await remote.read()
    finally:
        await remote.aclose()
    assert t.kind == "dcgm"
    assert t.source == f"specmon agent at {server.url}"
    assert t.driver_version == "570.124.06"
    assert t.hostname == socket.gethostname()
    assert nvml.calls_on_loop == 0  # the agent reads NVML in a worker thread
    direct = NvmlSource(FakeNvml(h200s(8))).read_blocking()
    strip = [replace(g, processes=None) for g in t.gpus]
    assert strip == [replace(g, processes=None) for g in direct.gpus]
    assert t.gpus[0].processes is not None and t.gpus[1].processes is not None
    (server_process,) = t.gpus[0].processes
    assert (server_process.pid, server_process.is_server) == (os.getpid(), True)
    (other,) = t.gpus[1].processes
    assert (other.pid, other.is_server, other.used_memory_mib) == (1, False, 512.0)
    assert other.name  # psutil could name it
    # pid 40002 exists nowhere: unknown, not "someone else's"
    assert t.gpus[2].processes == (GpuProcess(40002, 70_002.0, None, None, None),)
    assert t.server_process is not None and t.server_process.pid == os.getpid()
    assert t.host is not None and t.host.memory_total_bytes is not None


def test_agent_cli_port_taken(capsys: pytest.CaptureFixture[str], listening: int) -> None:
    code = main(["agent", "--host", "127.0.0.1", "--port", str(listening)])
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"specmon: error: cannot listen on 127.0.0.1:{listening}: ")
    assert err.endswith("(dcgm-exporter may hold it: pass --port)")
