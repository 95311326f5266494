"""psutil facade: the listener by port (this test process listens), host stats, local addresses."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import psutil  # type: ignore[import-untyped]
import pytest

from specmon.sources.host import (
    HostSource,
    ServerProcessUnknown,
    find_listener,
    is_local_address,
    own_addresses,
)


@pytest.fixture
def listening() -> Iterator[int]:
    """A port this process listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port nobody listens on (bound, not listening, while the test runs)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def test_finds_this_process_by_its_port(listening: int) -> None:
    assert find_listener(listening) == os.getpid()


def test_falls_back_to_each_process_when_the_table_is_refused(listening: int) -> None:
    def refused(**_: Any) -> Any:
        raise psutil.AccessDenied()

    assert find_listener(listening, net_connections=refused) == os.getpid()


def test_nothing_listening(closed_port: int) -> None:
    with pytest.raises(ServerProcessUnknown) as info:
        find_listener(closed_port)
    assert str(info.value) == f"nothing on this machine listens on port {closed_port}"


def test_a_listener_of_another_user() -> None:
    # What psutil reports for another user's socket without privileges: no pid.
    other = SimpleNamespace(status=psutil.CONN_LISTEN, laddr=SimpleNamespace(port=30000), pid=None)
    with pytest.raises(ServerProcessUnknown, match="belongs to another user"):
        find_listener(30000, net_connections=lambda **_: [other])


def test_host_and_server_process_readings(listening: int) -> None:
    source = HostSource(listening)
    first = source.read()
    me = psutil.Process()
    assert first.host.cpu_percent is None  # psutil measures between two readings
    assert first.host.memory_total_bytes == psutil.virtual_memory().total
    assert first.host.cpu_count == psutil.cpu_count(logical=True)
    assert first.host.memory_used_bytes is not None
    assert 0 < first.host.memory_used_bytes < first.host.memory_total_bytes
    proc = first.server_process
    assert proc is not None
    assert proc.pid == os.getpid()
    assert proc.port == listening
    assert proc.name == me.name()
    assert proc.start_time == me.create_time()
    assert proc.rss_bytes is not None and proc.rss_bytes > 10 * 1024 * 1024
    assert proc.cpu_percent is None
    assert first.server_pids is not None and os.getpid() in first.server_pids
    second = source.read()
    assert second.host.cpu_percent is not None and 0.0 <= second.host.cpu_percent <= 100.0
    assert second.server_process is not None
    assert second.server_process.cpu_percent is not None
    assert second.server_process.start_time == proc.start_time


def test_the_host_is_read_every_few_seconds_and_the_server_process_every_time(
    listening: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host CPU and memory move slowly: read again after HOST_EVERY_S (the CPU figure then
    averages over the span), except that the first figure comes at the second reading. The
    server process, a restart signal, is read at every call."""
    from specmon.sources import host as host_module

    host_reads = 0
    cpu_percent = psutil.cpu_percent

    def counting(interval: float | None = None) -> float:
        nonlocal host_reads
        host_reads += 1
        return float(cpu_percent(interval=interval))

    monkeypatch.setattr(host_module.psutil, "cpu_percent", counting)
    now = [0.0]
    source = HostSource(listening, clock=lambda: now[0])
    readings = []
    for t in (0.0, 1.0, 2.0, 5.0, 6.0, 7.0):
        now[0] = t
        readings.append(source.read())
    assert host_reads == 3  # at 0 (priming), 1 (the first figure) and 6 (5 s after it)
    assert readings[0].host.cpu_percent is None
    assert readings[1].host is readings[2].host is readings[3].host  # kept until 6 s
    assert readings[1].host.cpu_percent is not None
    assert readings[4].host is readings[5].host is not readings[3].host
    cpu = [r.server_process.cpu_percent for r in readings if r.server_process is not None]
    assert len(cpu) == 6 and cpu[0] is None and None not in cpu[1:]


def test_the_process_tree_only_when_asked(listening: int) -> None:
    source = HostSource(listening)
    without = source.read(tree=False)
    assert without.server_process is not None and without.server_pids is None
    assert source.read().server_pids is not None


def test_server_process_missing(closed_port: int) -> None:
    reading = HostSource(closed_port).read()
    assert reading.server_process is None
    assert reading.server_pids is None
    assert (
        reading.server_process_missing == f"nothing on this machine listens on port {closed_port}"
    )
    assert HostSource(None).read().server_process_missing is None


def test_local_addresses() -> None:
    assert is_local_address("127.0.0.1")
    assert is_local_address("[::1]")
    assert is_local_address("0.0.0.0")
    assert is_local_address("localhost")
    for address in own_addresses():
        assert is_local_address(address)
    assert not is_local_address("192.0.2.1")  # TEST-NET-1: never a real interface
    assert not is_local_address("gpu-box", resolve=lambda _: ["192.0.2.7"])
    assert is_local_address("me", resolve=lambda _: ["192.0.2.7", "127.0.1.1"])

    def unknown(_: str) -> list[str]:
        raise socket.gaierror("Name or service not known")

    assert not is_local_address("no-such-host", resolve=unknown)


def test_port_lookups_are_not_repeated_every_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lookup scans every socket: redone only when the process is gone or after a pause."""
    import os

    from specmon.sources import host as host_module

    calls: list[int] = []
    answer: dict[str, int | None] = {"pid": None}

    def fake_find(port: int) -> int:
        calls.append(port)
        if answer["pid"] is None:
            raise host_module.ServerProcessUnknown(
                f"nothing on this machine listens on port {port}"
            )
        return answer["pid"]

    monkeypatch.setattr(host_module, "find_listener", fake_find)
    now = [0.0]
    source = host_module.HostSource(30000, clock=lambda: now[0])
    assert source.read().server_process_missing is not None
    now[0] = 5.0
    assert source.read().server_process_missing is not None
    assert len(calls) == 1  # the miss is remembered for RETRY_MISSING_S
    answer["pid"] = os.getpid()
    now[0] = 11.0
    found = source.read()
    assert found.server_process is not None and found.server_process.pid == os.getpid()
    now[0] = 12.0
    source.read()
    assert len(calls) == 2  # the live process is kept, not looked up again
