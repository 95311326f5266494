"""psutil facade: the host's CPU and memory, the server process found by its listening port, and
whether an address is this machine's.

Everything here blocks (psutil reads /proc, DNS resolves): callers on the event loop run it with
`asyncio.to_thread`. Only this module imports psutil.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import psutil  # type: ignore[import-untyped]  # no stubs installed; typeshed has types-psutil

from specmon.errors import SourceError
from specmon.model import HostStats, ProcessStats


class ServerProcessUnknown(SourceError):
    """The process listening on the server's port could not be found or seen."""


def process_name(pid: int) -> str | None:
    """The name of a process, or None when it is gone or not visible from here."""
    try:
        return str(psutil.Process(pid).name())
    except psutil.Error:
        return None


def own_addresses() -> set[str]:
    """Every IP address of this machine's interfaces."""
    addresses: set[str] = set()
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family in (socket.AF_INET, socket.AF_INET6):
                addresses.add(str(entry.address).split("%")[0])  # drop an IPv6 zone ("%eth0")
    return addresses


def is_local_address(host: str, *, resolve: Callable[[str], Iterable[str]] | None = None) -> bool:
    """Whether `host` (a name or an IP) is this machine: loopback, unspecified or one of its
    interfaces' addresses. A name that does not resolve is not local.

    Args:
        host: As in the server URL (IPv6 may be bracketed).
        resolve: Name to addresses (default: `socket.getaddrinfo`), injectable for tests.
    """
    name = host.strip("[]")
    lookup = resolve or _resolve
    try:
        candidates = [name] if _is_ip(name) else list(lookup(name))
    except OSError:
        return False
    mine = own_addresses()
    for text in candidates:
        address = ipaddress.ip_address(text.split("%")[0])
        if address.is_loopback or address.is_unspecified or str(address) in mine:
            return True
    return False


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _resolve(name: str) -> list[str]:
    return [str(info[4][0]) for info in socket.getaddrinfo(name, None)]


def find_listener(port: int, *, net_connections: Callable[..., Any] | None = None) -> int:
    """The pid of the process listening on a TCP port of this machine.

    Several listeners on one port (workers sharing it) resolve to the one whose parent is not
    among them. Where the system-wide table is refused (macOS without root), each process is
    asked in turn, skipping those that refuse.

    Args:
        port: The TCP port.
        net_connections: `psutil.net_connections`, injectable for tests.

    Raises:
        ServerProcessUnknown: Nothing listens there, or the listener cannot be seen.
    """
    table = net_connections or psutil.net_connections
    try:
        connections = table(kind="inet")
    except psutil.AccessDenied:
        return _find_listener_per_process(port)
    listeners = [c for c in connections if _listens(c, port)]
    pids = {c.pid for c in listeners if c.pid is not None}
    if pids:
        return _root_of(pids)
    if listeners:
        raise ServerProcessUnknown(
            f"port {port}: the listening process belongs to another user "
            "(run specmon as that user or as root to see it)"
        )
    raise ServerProcessUnknown(f"nothing on this machine listens on port {port}")


def _find_listener_per_process(port: int) -> int:
    pids: set[int] = set()
    refused = 0
    for proc in psutil.process_iter():
        try:
            # psutil < 6 names it `connections`.
            connections = getattr(proc, "net_connections", None) or proc.connections
            if any(_listens(c, port) for c in connections(kind="inet")):
                pids.add(int(proc.pid))
        except (psutil.AccessDenied, psutil.ZombieProcess):
            refused += 1
        except psutil.NoSuchProcess:
            continue
    if pids:
        return _root_of(pids)
    if refused:
        raise ServerProcessUnknown(
            f"port {port}: no visible process listens there and {refused} processes refused "
            "to say (run specmon as the server's user or as root)"
        )
    raise ServerProcessUnknown(f"nothing on this machine listens on port {port}")


def _listens(connection: Any, port: int) -> bool:
    # `laddr` is an empty tuple where a socket has no address.
    return bool(connection.status == psutil.CONN_LISTEN and connection.laddr) and (
        connection.laddr.port == port
    )


def _root_of(pids: set[int]) -> int:
    for pid in sorted(pids):
        try:
            if psutil.Process(pid).ppid() not in pids:
                return pid
        except psutil.Error:
            continue
    return min(pids)


def process_tree(pid: int) -> frozenset[int]:
    """A process and all its descendants (the server's scheduler and worker processes)."""
    try:
        proc = psutil.Process(pid)
        return frozenset({pid, *(int(child.pid) for child in proc.children(recursive=True))})
    except psutil.Error:
        return frozenset({pid})


@dataclass(frozen=True, slots=True)
class HostReading:
    """What `HostSource.read` saw."""

    host: HostStats
    server_process: ProcessStats | None
    server_process_missing: str | None
    """Why there is no server process, when one was looked for."""
    server_pids: frozenset[int] | None
    """The server's process tree, to tell its GPU processes from others; None if unknown or
    not asked for."""


class HostSource:
    """Host CPU and memory, and the server process by its port. Blocking: run it in a thread.

    It keeps the psutil objects between readings: CPU percentages are measured from one reading
    to the next, so the first reading of each has None.
    """

    # Looking a port up scans every socket of the machine (about 12 ms here): done again only
    # when the known process has gone, or now and then while nothing listens.
    RETRY_MISSING_S = 10.0
    TREE_EVERY_S = 10.0
    # The host's CPU and memory move slowly and are context, not the server's figures: read
    # every 5 s (CPU then averages over those), they cost a fifth of what they did each second,
    # ~0.4 ms of an idle dashboard's second (docs/performance.md). The server process, a restart
    # signal, is read at every call.
    HOST_EVERY_S = 5.0

    def __init__(
        self, server_port: int | None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Args:
        server_port: The server's TCP port on this machine; None to skip the process.
        clock: Monotonic clock (tests inject one).
        """
        self.server_port = server_port
        self.clock = clock
        self._process: Any = None  # psutil.Process of the server, kept for cpu_percent
        self._missing: tuple[float, str] | None = None  # (when, why) the last lookup failed
        self._tree: tuple[float, int, frozenset[int]] | None = None  # (when, pid, tree)
        self._host: tuple[float, HostStats] | None = None  # (when, what) the host was read

    def read(self, *, tree: bool = True) -> HostReading:
        """Read the host (at most every `HOST_EVERY_S`), and find and read the server process.

        Args:
            tree: Also list the server's process tree (`HostReading.server_pids`): only needed
                to tell its GPU processes from others, and a scan of every process.
        """
        now = self.clock()
        last = self._host
        # Again at the second call too: the first has no CPU figure (psutil needs two readings).
        if last is None or last[1].cpu_percent is None or now - last[0] >= self.HOST_EVERY_S:
            last = self._host = (now, self._read_host(primed=last is not None))
        host = last[1]
        if self.server_port is None:
            return HostReading(host, None, None, None)
        if self._missing is not None and now - self._missing[0] < self.RETRY_MISSING_S:
            return HostReading(host, None, self._missing[1], None)
        try:
            stats = self._server_process(self.server_port)
        except ServerProcessUnknown as exc:
            self._process = None
            self._missing = (now, str(exc))
            return HostReading(host, None, str(exc), None)
        self._missing = None
        if not tree:
            return HostReading(host, stats, None, None)
        if (
            self._tree is None
            or self._tree[1] != stats.pid
            or now - self._tree[0] > self.TREE_EVERY_S
        ):
            self._tree = (now, stats.pid, process_tree(stats.pid))
        return HostReading(host, stats, None, self._tree[2])

    def _read_host(self, *, primed: bool) -> HostStats:
        """The host now; `primed`: a reading came before (CPU is measured since then)."""
        cpu = psutil.cpu_percent(interval=None)
        memory = psutil.virtual_memory()
        return HostStats(
            cpu_percent=float(cpu) if primed else None,
            cpu_count=psutil.cpu_count(logical=True),
            memory_used_bytes=int(memory.total - memory.available),
            memory_total_bytes=int(memory.total),
        )

    def _server_process(self, port: int) -> ProcessStats:
        # The process found last time still runs (is_running also checks its start time, so a
        # reused pid does not pass): it still holds the port. Otherwise look the port up again.
        known = self._process is not None and self._process.is_running()
        pid = self._process.pid if known else find_listener(port)
        fresh = not known
        try:
            if fresh:
                self._process = psutil.Process(pid)
            proc = self._process
            with proc.oneshot():
                cpu = float(proc.cpu_percent(interval=None))  # 0.0 on the first call: unknown
                return ProcessStats(
                    pid=pid,
                    name=str(proc.name()),
                    start_time=float(proc.create_time()),
                    cpu_percent=None if fresh else cpu,
                    rss_bytes=int(proc.memory_info().rss),
                    port=port,
                )
        except psutil.Error as exc:
            self._process = None
            raise ServerProcessUnknown(f"port {port}: pid {pid}: {exc}") from None


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """This machine's cumulative CPU time, all CPUs together (seconds since boot)."""

    busy_s: float
    """Every state but idle and I/O wait."""
    steal_s: float | None
    """Taken by a hypervisor for other guests (Linux); None where psutil has no `steal`."""
    total_s: float


def cpu_times() -> CpuTimes | None:
    """This machine's CPU times now (one read of /proc/stat on Linux: cheap enough to call on
    the event loop around a probe); None when psutil cannot read them."""
    try:
        times = psutil.cpu_times()
    except (psutil.Error, OSError):
        return None
    total = float(sum(times))
    idle = float(times.idle) + float(getattr(times, "iowait", 0.0))
    steal = getattr(times, "steal", None)
    return CpuTimes(total - idle, None if steal is None else float(steal), total)


def cpu_shares(before: CpuTimes | None, after: CpuTimes | None) -> tuple[float | None, ...]:
    """(busy %, steal %) of the CPU time between two readings; None where unknown."""
    if before is None or after is None or after.total_s <= before.total_s:
        return None, None
    total = after.total_s - before.total_s
    busy = 100 * (after.busy_s - before.busy_s) / total
    steal = None
    if before.steal_s is not None and after.steal_s is not None:
        steal = 100 * (after.steal_s - before.steal_s) / total
    return busy, steal
