"""A speculative server that specmon launched (`specmon launch`): the dashboard's `b` relaunches
it without speculation, takes the baseline, and relaunches it with speculation.

The speculative server is restored whatever happens to the baseline (a failure, `Esc`): its
relaunch runs in a `finally`, and is itself shielded from a second cancellation.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from specmon.launch.process import LaunchFailed, ServerProcess, port_free
from specmon.launch.split import Launch, Split, address
from specmon.measure.bench import Progress
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, Snapshot
from specmon.storage.private_files import private_dir
from specmon.target import Target


class ManagedServer:
    """The speculative server of a split, launched and kept by specmon.

    Args:
        split: The speculative command and its baseline.
        target: How to reach it (its URL from the command).
        health_timeout_s: How long a launch may take to answer /health.
        logs: Where the servers' logs go (a temporary folder by default).
    """

    def __init__(
        self, split: Split, target: Target, health_timeout_s: float, logs: Path | None = None
    ) -> None:
        self.split = split
        self.target = target
        self.health_timeout_s = health_timeout_s
        self.logs = private_dir(logs) if logs else Path(tempfile.mkdtemp(prefix="specmon-launch-"))
        self._server: ServerProcess | None = None
        self._launches = 0

    async def start(self, say: Callable[[str], None] = lambda _line: None) -> None:
        """Launch the speculative server and wait until it is up.

        Raises:
            LaunchFailed: Its port is taken, it cannot run, it exits or is not up in time.
        """
        await self._launch(self.split.speculative, "speculative", say)

    async def take_baseline(
        self,
        protocol: Protocol,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        say: Callable[[str], None] = lambda _line: None,
        wall: Callable[[], float] = time.time,
    ) -> Snapshot:
        """Stop the speculative server, bench its baseline, and bring the speculative one back.

        Raises:
            LaunchFailed: A launch failed (the speculative one is restored if it can be).
            SourceError, BenchInvalid, NotABaseline: The bench failed (typed).
        """
        try:
            await self._launch(self.split.baseline, "baseline", say)
            say("benching the baseline")
            return await take_snapshot(
                self.target,
                protocol,
                kind=SnapshotKind.BASELINE,
                label="relaunched without speculation",
                on_progress=on_progress,
                again=say,
                wall=wall,
            )
        finally:
            # Shielded: a second Esc must not leave the user without their server.
            await asyncio.shield(self._launch(self.split.speculative, "speculative", say))

    def stop(self) -> None:
        """Stop whichever server runs now (its whole process group)."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    async def _launch(self, launch: Launch, name: str, say: Callable[[str], None]) -> None:
        self.stop()
        host, port = address(launch, self.split.kind)
        if not port_free(host, port):
            raise LaunchFailed(f"port {port} on {host} is taken: the {name} server cannot start")
        self._launches += 1
        server = ServerProcess(launch, self.logs / f"{self._launches:03d}-{name}.log")
        say(f"starting the {name} server")
        server.start()
        self._server = server
        await server.wait_healthy(self.target.url, self.health_timeout_s)
        say(f"the {name} server is up")
