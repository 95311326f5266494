"""One launched server: its own process group, up when `/health` answers 200, stopped as a group
(SIGTERM, then SIGKILL after a grace period) so that no worker outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx

from specmon.errors import SpecmonError
from specmon.launch.split import Launch
from specmon.sources.secrets import mask_command
from specmon.storage.private_files import open_private

HEALTH_EVERY_S = 0.25
STOP_GRACE_S = 15.0
EXIT_WAIT_S = 2.0
LOG_TAIL_LINES = 8


class LaunchFailed(SpecmonError):
    """The server did not come up: it exited, its port was taken, or it was not healthy in time."""


def port_free(host: str, port: int) -> bool:
    """Whether nothing listens on host:port (a server we start there could bind it)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((host, port)) != 0


def group_alive(pgid: int) -> bool:
    """Whether any process of a process group is left (zombies count until reaped)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ServerProcess:
    """A server started in its own session (process group), logging to a file.

    Args:
        launch: What to run.
        log: The file its stdout and stderr go to.
        inherited: The environment it inherits (os.environ by default).
    """

    def __init__(
        self, launch: Launch, log: Path, inherited: Mapping[str, str] | None = None
    ) -> None:
        self.launch = launch
        self.log = log
        self._inherited = os.environ if inherited is None else inherited
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pgid(self) -> int | None:
        """Its process group (= its pid: it leads its own session); None before `start`."""
        return self._popen.pid if self._popen is not None else None

    def start(self) -> None:
        """Start it; returns at once.

        Raises:
            LaunchFailed: The program cannot be run.
        """
        with open_private(self.log, "ab") as out:
            try:
                self._popen = subprocess.Popen(
                    self.launch.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=self.launch.environ(self._inherited),
                    start_new_session=True,  # its own group: stopped whole, Ctrl-C not shared
                )
            except OSError as exc:
                raise LaunchFailed(f"cannot run {self.launch.argv[0]!r}: {exc.strerror}") from None

    async def wait_healthy(
        self, url: str, timeout_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Wait until GET url/health answers 200.

        Raises:
            LaunchFailed: It exited first, or `timeout_s` passed (the log's last lines shown).
        """
        assert self._popen is not None, "start() first"
        deadline = clock() + timeout_s
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                code = self._popen.poll()
                if code is not None:
                    raise LaunchFailed(
                        f"the server exited with status {code} before it was up{self._tail()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{url}/health")).status_code == 200:
                        return
                if clock() > deadline:
                    raise LaunchFailed(f"the server was not up after {timeout_s:g} s{self._tail()}")
                await asyncio.sleep(HEALTH_EVERY_S)

    async def exited_within(self, wait_s: float = EXIT_WAIT_S) -> int | None:
        """Its exit status if it has exited or exits within `wait_s` (a crash mid-run), else None.

        Waits because a killed server's clients see their connections reset as the kernel
        closes its sockets, a moment before the process can be reaped.
        """
        if self._popen is None:
            return None
        with contextlib.suppress(subprocess.TimeoutExpired):
            return await asyncio.to_thread(self._popen.wait, wait_s)
        return None

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after `grace_s`. Idempotent.

        Synchronous on purpose: it runs in `finally` blocks of cancelled tasks, and must finish
        there whatever the event loop is doing.
        """
        if self._popen is None:
            return
        pgid = self._popen.pid
        self._signal(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=grace_s)
        # The leader may be gone while its workers still exit: give them the rest of the grace.
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self._signal(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=grace_s)

    @staticmethod
    def _signal(pgid: int, signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)

    def _tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        except OSError:
            return ""
        # Masked: a server may print its settings with its key (SGLang's `server_args=…`).
        shown = " | ".join(mask_command(line.strip())[:160] for line in lines if line.strip())
        return f"; its log ({self.log}) ends: {shown}" if shown else f"; its log: {self.log}"
