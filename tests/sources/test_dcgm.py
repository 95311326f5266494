"""DCGM-style scrapes: dcgm-exporter's 8-GPU output, Kubernetes labels, and the source's states."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from specmon.errors import HttpStatus, MalformedResponse, TargetError, Unreachable
from specmon.model import GpuDevice
from specmon.sim import SimConfig, SimThread
from specmon.sources.dcgm import DcgmSource, split_metrics_url, telemetry_from_text
from specmon.sources.http import make_client
from specmon.target import Target

FIXTURES = Path(__file__).parent.parent / "fixtures" / "dcgm"
URL = "http://gpu-node-07:9400/metrics"


def test_dcgm_exporter_eight_gpus_all_readings_there() -> None:
    t = telemetry_from_text((FIXTURES / "dcgm-exporter-8gpu.txt").read_text(), URL)
    assert t.kind == "dcgm"
    assert t.source == f"DCGM exporter at {URL}"
    assert t.unavailable is None
    assert t.hostname == "gpu-node-07"
    assert t.driver_version == "570.124.06"
    assert t.host is None and t.server_process is None
    assert [g.index for g in t.gpus] == list(range(8))
    assert t.gpus[0] == GpuDevice(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-5f4e3d2c-1b0a-0000-8e7f-6a5b4c3d2e10",
        utilization_pct=90.0,
        memory_used_mib=70_559.0,
        memory_total_mib=80_559.0,  # used + free: the default counters have no total
        power_w=612.25,
        power_limit_w=None,  # not among the default counters
        sm_clock_mhz=1980.0,
        sm_clock_max_mhz=None,
        mem_clock_mhz=2619.0,
        mem_clock_max_mhz=None,
        temperature_c=52.0,
        clock_event_mask=None,  # not among the default counters either
        processes=None,  # dcgm-exporter lists no processes
    )
    assert t.gpus[5].sm_clock_mhz == 1410.0
    assert t.gpus[7].power_w == 636.75
    assert t.gpus[7].memory_used_mib == 71_259.0
    assert {g.memory_total_mib for g in t.gpus} == {80_559.0}
    assert len({g.uuid for g in t.gpus}) == 8


def test_kubernetes_labels_duplicates_and_older_names() -> None:
    t = telemetry_from_text((FIXTURES / "dcgm-exporter-k8s.txt").read_text(), URL)
    gpu0, gpu1 = t.gpus
    assert gpu0.name == "NVIDIA H200"
    assert gpu0.memory_total_mib == 130_000 + 12_570 + 501  # used + free + reserved
    assert gpu0.power_limit_w == 700.0  # the management limit, when no enforced one
    assert gpu0.throttle_reasons == ("sw_power_cap",)  # DCGM_FI_DEV_CLOCK_THROTTLE_REASONS
    assert gpu0.sm_clock_mhz == 1755.0
    assert gpu1.utilization_pct is None  # absent is unknown, not 0
    assert gpu1.throttle_reasons == ("idle",)


def test_not_prometheus_text() -> None:
    with pytest.raises(MalformedResponse, match=r"is not Prometheus text format"):
        telemetry_from_text('DCGM_FI_DEV_NAME{gpu="0"} Tesla T4\n', URL)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("10.1.230.174:9400", ("http://10.1.230.174:9400", "/metrics")),
        ("http://h:9400/", ("http://h:9400", "/metrics")),
        ("https://h/dcgm/metrics?x=1", ("https://h", "/dcgm/metrics?x=1")),
        ("[::1]:9400", ("http://[::1]:9400", "/metrics")),
    ],
)
def test_metrics_url_forms(raw: str, expected: tuple[str, str]) -> None:
    assert split_metrics_url(raw) == expected


@pytest.mark.parametrize("raw", ["ftp://h:9400", "http://h:99999", "http://"])
def test_bad_metrics_urls(raw: str) -> None:
    with pytest.raises(TargetError, match="--gpu-metrics"):
        split_metrics_url(raw)


def _client(handler: httpx.MockTransport) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url="http://10.1.230.174:9400", transport=handler)


def _refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno 111] Connection refused", request=request)


async def test_guessed_endpoint_with_nothing_there_is_a_state() -> None:
    url = "http://10.1.230.174:9400/metrics"
    source = DcgmSource(url, explicit=False, client=_client(httpx.MockTransport(_refused)))
    t = await source.read()
    assert t.gpus == ()
    assert (
        t.unavailable == f"no GPU metrics at {url}: cannot connect ([Errno 111] Connection refused)"
    )
    assert t.hint == "run `specmon agent` on the GPU box or pass --gpu-metrics URL"
    not_found = httpx.MockTransport(lambda _: httpx.Response(404, text="404 page not found"))
    t = await DcgmSource(url, explicit=False, client=_client(not_found)).read()
    assert t.unavailable == f"no GPU metrics at {url}: HTTP 404 404 page not found"
    await source.aclose()


async def test_explicit_endpoint_fails_loudly() -> None:
    url = "http://10.1.230.174:9400/metrics"
    source = DcgmSource(url, explicit=True, client=_client(httpx.MockTransport(_refused)))
    with pytest.raises(Unreachable, match="cannot connect"):
        await source.read()
    not_found = httpx.MockTransport(lambda _: httpx.Response(404))
    with pytest.raises(HttpStatus):
        await DcgmSource(url, explicit=True, client=_client(not_found)).read()


async def test_scrape_over_http() -> None:
    body = (FIXTURES / "dcgm-exporter-8gpu.txt").read_bytes()
    seen: list[str] = []

    def serve(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, content=body)

    source = DcgmSource(
        "10.1.230.174:9400", explicit=True, client=_client(httpx.MockTransport(serve))
    )
    t = await source.read()
    assert seen == ["/metrics"]
    assert len(t.gpus) == 8
    assert source.kind == "dcgm"
    assert source.url == "http://10.1.230.174:9400/metrics"


async def test_the_default_client_reads_and_fails_as_httpx_own_does() -> None:
    """The default client sends through the polls' aiohttp transport: the same GPUs read, and
    the same words for nothing listening, as a client on httpx's own transport."""
    with SimThread(SimConfig(gpus=8)) as sim:
        read = []
        for client in (None, make_client(Target(sim.url))):
            source = DcgmSource(f"{sim.url}/gpu-metrics", explicit=True, client=client)
            t = await source.read()
            read.append([(g.index, g.name, g.memory_total_mib, g.power_limit_w) for g in t.gpus])
            await source.aclose()
    assert read[0] == read[1] and len(read[0]) == 8
    url = "http://127.0.0.1:9/metrics"
    unavailable = []
    for client in (None, make_client(Target("http://127.0.0.1:9"))):
        source = DcgmSource(url, explicit=False, client=client)
        unavailable.append((await source.read()).unavailable)
        await source.aclose()
    assert unavailable[0] == unavailable[1]
    assert unavailable[0] == f"no GPU metrics at {url}: connection refused (nothing listening?)"
