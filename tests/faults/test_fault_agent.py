"""The agent under faults: a hung or failing NVML answers every scrape in time with its cause;
scrapers of a sick agent (or dcgm-exporter) say why they have no GPUs and go on; and a server
whose command line holds its API key does not leak it through the agent."""

from __future__ import annotations

import asyncio
import re
import sys
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fault_cases import FAST

from specmon.agent import Agent
from specmon.cli import build_parser, main
from specmon.cli.agent import _token
from specmon.errors import HttpStatus
from specmon.model import GpuSourceKind, Telemetry
from specmon.sim import SimThread
from specmon.sources.dcgm import DcgmSource
from specmon.sources.host import HostSource
from specmon.sources.nvml import NvmlSource
from specmon.sources.telemetry import LocalTelemetry

KEY = "sk-specmon-SECRET-on-the-gpu-box"


class StuckTelemetry:
    """A telemetry source whose reads hang until released (a hung NVML call), or fail."""

    def __init__(self, error: Exception | None = None) -> None:
        self.release = asyncio.Event()
        self.reads = 0
        self.error = error

    @property
    def kind(self) -> GpuSourceKind:
        return "nvml"

    @property
    def description(self) -> str:
        return "stuck"

    async def read(self) -> Telemetry:
        self.reads += 1
        if self.error is not None:
            raise self.error
        await self.release.wait()
        return Telemetry("nvml", "stuck", unavailable="no GPU here")

    async def aclose(self) -> None:
        self.release.set()


@pytest.fixture
async def stuck() -> AsyncIterator[tuple[Agent, StuckTelemetry]]:
    telemetry = StuckTelemetry()
    agent = Agent(telemetry, "127.0.0.1", 0, read_timeout=0.2)
    await agent.start()
    yield agent, telemetry
    await telemetry.aclose()
    await agent.stop()


@pytest.mark.slow
async def test_hung_nvml_answers_503_in_time_and_recovers(
    stuck: tuple[Agent, StuckTelemetry],
) -> None:
    agent, telemetry = stuck
    async with httpx.AsyncClient(timeout=5) as client:
        answers = await asyncio.gather(*(client.get(agent.url) for _ in range(5)))
        assert {a.status_code for a in answers} == {503}
        assert answers[0].text == (
            "specmon agent: reading the GPUs took longer than 0.2 s (NVML hung?)\n"
        )
        assert telemetry.reads == 1  # concurrent scrapes share the one reading in flight
        source = DcgmSource(agent.url, explicit=True)
        with pytest.raises(HttpStatus, match=r"HTTP 503 specmon agent: .*\(NVML hung\?\)"):
            await source.read()
        await source.aclose()
        telemetry.release.set()
        answer = await client.get(agent.url)
    assert answer.status_code == 200
    assert "specmon_gpu_unavailable" in answer.text


async def test_failing_reader_answers_500_with_its_cause() -> None:
    agent = Agent(StuckTelemetry(RuntimeError("psutil broke")), "127.0.0.1", 0)
    await agent.start()
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            answer = await client.get(agent.url)
    finally:
        await agent.stop()
    assert answer.status_code == 500
    assert (
        answer.text
        == "specmon agent: cannot read the GPUs and host: RuntimeError('psutil broke')\n"
    )


@pytest.fixture
def gpu_endpoint() -> Iterator[SimThread]:
    """Any /metrics endpoint stands in for a GPU exporter; its faults are the agent's."""
    with SimThread(FAST) as sim:
        yield sim


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        (lambda f: f.status.update({"/metrics": 500}), "HTTP 500"),
        (lambda f: f.huge.update({"/metrics": 100 * 2**20}), "larger than 16 MiB"),
        (lambda f: f.body.update({"/metrics": ("text/html", b"<h1>")}), "not Prometheus text"),
    ],
    ids=["500", "100 MB", "HTML"],
)
def test_check_reports_a_sick_gpu_endpoint_and_carries_on(
    fault: object, cause: str, gpu_endpoint: SimThread, capsys: pytest.CaptureFixture[str]
) -> None:
    fault(gpu_endpoint.server.faults)  # type: ignore[operator]
    with SimThread(FAST) as server:
        code = main(
            [
                "check",
                server.url,
                "--probe-tokens",
                "12",
                "--db",
                ":memory:",
                "--gpu-metrics",
                gpu_endpoint.url + "/metrics",
            ]
        )
    lines = capsys.readouterr().out.splitlines()
    assert code == 0, lines  # GPU trouble is information: the server is healthy
    (gpu,) = [line for line in lines if line.startswith("! GPUs:")]
    assert re.search(cause, gpu), gpu


async def test_the_agent_does_not_show_the_servers_command_line() -> None:
    """SGLang's command line holds `--api-key`: the agent names the process, never its args."""
    listen = (
        "import socket, sys; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
        "print(s.getsockname()[1], flush=True); sys.stdin.read()"
    )
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-c", listen, "--api-key", KEY, stdin=PIPE, stdout=PIPE
    )
    assert server.stdout is not None and server.stdin is not None
    try:
        port = int(await server.stdout.readline())
        telemetry = LocalTelemetry(NvmlSource(), HostSource(port))
        agent = Agent(telemetry, "127.0.0.1", 0)
        await agent.start()
        try:
            async with httpx.AsyncClient(timeout=10) as client:
                body = (await client.get(agent.url)).text
        finally:
            await agent.stop()
            await telemetry.aclose()
    finally:
        server.stdin.close()
        await server.wait()
    assert f'pid="{server.pid}"' in body  # the server process is there, by pid and name
    assert KEY not in body


class ReadyTelemetry(StuckTelemetry):
    """A telemetry source that answers at once (no GPU)."""

    def __init__(self) -> None:
        super().__init__()
        self.release.set()


AGENT_TOKEN = "agent-token-51c2e0"


async def test_the_agent_asks_for_its_token_and_this_machines_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 36: the agent answered anyone, under any Host (a page on a rebound DNS name could
    read the host's processes and GPU UUIDs through a browser)."""
    agent = Agent(ReadyTelemetry(), "127.0.0.1", 0, token=AGENT_TOKEN)
    await agent.start()
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            refused = await client.get(agent.url)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            assert AGENT_TOKEN not in refused.text
            wrong = await client.get(agent.url, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
            good = {"Authorization": f"Bearer {AGENT_TOKEN}"}
            assert (await client.get(agent.url, headers=good)).status_code == 200
            foreign = {**good, "Host": f"rebind.example:{agent.port}"}
            answer = await client.get(agent.url, headers=foreign)
            assert answer.status_code == 403 and "--allow-host" in answer.text
        # specmon's GPU source sends $SPECMON_AGENT_TOKEN to the agent it reads.
        monkeypatch.setenv("SPECMON_AGENT_TOKEN", AGENT_TOKEN)
        source = DcgmSource(agent.url, explicit=True)
        try:
            telemetry = await source.read()
        finally:
            await source.aclose()
        assert telemetry.unavailable is not None and "no GPU here" in telemetry.unavailable
    finally:
        await agent.stop()


def test_the_agent_listens_on_loopback_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPECMON_AGENT_TOKEN", raising=False)
    args = build_parser().parse_args(["agent"])
    assert args.listen_host == "127.0.0.1"
    assert _token(args) is None  # loopback: no token needed
    args = build_parser().parse_args(["agent", "--host", "0.0.0.0"])
    made = _token(args)
    assert made is not None and len(made.value) >= 24  # elsewhere: a token, made and printed
    monkeypatch.setenv("SPECMON_AGENT_TOKEN", AGENT_TOKEN)
    given = _token(args)
    assert given is not None and given.value == AGENT_TOKEN


def test_the_agent_token_is_refused_on_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["agent", "--token", AGENT_TOKEN])
    assert "SPECMON_AGENT_TOKEN" in capsys.readouterr().err
