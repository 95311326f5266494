"""Local or remote: the server's address picks NVML + psutil here, or port 9400 there."""

from __future__ import annotations

import pytest

from specmon.errors import TargetError
from specmon.model import GpuDevice, GpuProcess
from specmon.sources.dcgm import DcgmSource
from specmon.sources.telemetry import LocalTelemetry, attribute_processes, open_telemetry


@pytest.mark.parametrize(
    ("url", "port"),
    [("http://127.0.0.1:30000", 30000), ("http://localhost:8000", 8000), ("https://[::1]", 443)],
)
async def test_a_server_on_this_machine_reads_nvml(url: str, port: int) -> None:
    source = await open_telemetry(url)
    assert isinstance(source, LocalTelemetry)
    assert source.kind == "nvml"
    assert source.description == "NVML on this machine"
    assert source.host.server_port == port
    await source.aclose()


async def test_a_remote_server_is_scraped_at_9400() -> None:
    source = await open_telemetry("http://192.0.2.10:8000")
    assert isinstance(source, DcgmSource)
    assert source.kind == "dcgm"
    assert source.url == "http://192.0.2.10:9400/metrics"
    assert not source.explicit
    await source.aclose()


async def test_gpu_metrics_wins_even_for_a_local_server() -> None:
    source = await open_telemetry("http://127.0.0.1:30000", gpu_metrics="10.1.230.174:9500")
    assert isinstance(source, DcgmSource)
    assert source.url == "http://10.1.230.174:9500/metrics"
    assert source.explicit
    assert source.description == "GPU metrics at http://10.1.230.174:9500/metrics"
    await source.aclose()
    with pytest.raises(TargetError):
        await open_telemetry("http://127.0.0.1:30000", gpu_metrics="ftp://x")


def test_processes_are_attributed_only_when_known() -> None:
    gpus = (
        GpuDevice(
            0,
            processes=(
                GpuProcess(100, 1.0, "python"),  # the server
                GpuProcess(200, 2.0, "python"),  # someone else's
                GpuProcess(300, 3.0, None),  # not visible from here
            ),
        ),
        GpuDevice(1, processes=None),
    )
    marked = attribute_processes(gpus, frozenset({100, 101}))
    assert marked[0].processes is not None
    assert [p.is_server for p in marked[0].processes] == [True, False, None]
    assert marked[1].processes is None
    assert attribute_processes(gpus, None) == gpus
