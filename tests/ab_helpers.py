"""Shared by the `ab` tests: free ports, a recorder of launched process groups, interval checks."""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from specmon.analysis.comparison import Speedup
from specmon.launch.ab import AbEvents
from specmon.launch.process import ServerProcess, group_alive
from specmon.launch.relaunch import ManagedServer
from specmon.launch.split import split_command
from specmon.model import ServerInfo
from specmon.sources.backends import connect
from specmon.sources.http import make_client
from specmon.target import Target


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Launched:
    """Every server an A/B started, to check that none outlives it."""

    servers: list[ServerProcess] = field(default_factory=list)

    def events(self) -> AbEvents:
        """Events that record each launch."""
        return AbEvents(launched=self.servers.append)

    def assert_none_left(self) -> None:
        """No process of any launched group is left (the leader reaped, its workers gone)."""
        assert self.servers, "nothing was launched"
        left = [s.pgid for s in self.servers if s.pgid is not None and group_alive(s.pgid)]
        assert not left, f"process groups left running: {left}"


def overlap(a: Speedup, b: Speedup) -> bool:
    """Whether two speedups' 95% intervals overlap (each its value without one)."""
    a_low, a_high = (
        a.low if a.low is not None else a.value,
        a.high if a.high is not None else a.value,
    )
    b_low, b_high = (
        b.low if b.low is not None else b.value,
        b.high if b.high is not None else b.value,
    )
    return a_low <= b_high and b_low <= a_high


def managed(tmp_path: Path) -> ManagedServer:
    """A speculative simulator (NGRAM, SGLang's flag names) for specmon to launch and keep."""
    port = free_port()
    split = split_command(
        [
            sys.executable,
            "-m",
            "specmon.sim",
            "--plain-step-ms",
            "6",
            "--cycle-ms",
            "9",
            "--ttft-ms",
            "5",
            "--speculative-algorithm",
            "NGRAM",
            "--port",
            str(port),
        ],
        {},
    )
    return ManagedServer(split, Target(f"http://127.0.0.1:{port}"), 60, tmp_path)


async def info_of(server: ManagedServer) -> ServerInfo:
    """What the managed server reports now."""
    async with make_client(server.target) as client:
        return (await connect(client))[1]


def sims_left() -> list[psutil.Process]:
    """The simulator processes this test process started that still run."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            if "specmon.sim" in " ".join(process.cmdline()):
                found.append(process)
        except psutil.Error:  # it exited meanwhile (or is a zombie): not left running
            continue
    return found
