"""The managed A/B: baseline and speculative servers launched one at a time, ABAB, with the bench
protocol at every concurrency asked for, through `take_snapshot` like every other bench.

Nothing is saved here: `run_ab` returns every snapshot once all rounds are complete, so an A/B
that fails or is interrupted leaves nothing half-saved; whatever happens, the server it started
is stopped (its whole process group) before it returns or raises.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specmon.analysis.ab_runs import AbRun, Side
from specmon.errors import SourceError
from specmon.launch.process import LaunchFailed, ServerProcess, port_free
from specmon.launch.split import Launch, Split, address
from specmon.launch.sweep import Variant
from specmon.measure.bench import Progress
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, Snapshot
from specmon.storage.private_files import private_dir
from specmon.target import Target
from specmon.wording import streams

DEFAULT_HEALTH_TIMEOUT_S = 600.0
"""SGLang's first start on a GPU compiles kernels for minutes."""


@dataclass(frozen=True, slots=True)
class AbPlan:
    """What a managed A/B runs.

    Attributes:
        split: The speculative command and its baseline.
        target: How to reach the launched server (its URL from the command's --host/--port).
        protocol: The bench protocol; its concurrency is replaced by each of `concurrencies`.
        concurrencies: Streams at once, one bench each per server launch.
        rounds: ABAB rounds: each launches the baseline then the speculative server once.
        health_timeout_s: How long a server may take to answer /health.
        logs: Where the servers' logs go (a temporary folder by default).
        variants: Speculative configurations to try (`--sweep`), each launched after the
            round's baseline; none: the split's speculative launch alone.
    """

    split: Split
    target: Target
    protocol: Protocol
    concurrencies: tuple[int, ...]
    rounds: int = 2
    health_timeout_s: float = DEFAULT_HEALTH_TIMEOUT_S
    logs: Path | None = None
    variants: tuple[Variant, ...] = ()

    def speculative(self) -> list[tuple[str | None, Launch]]:
        """The speculative launches of each round, with their sweep labels."""
        if not self.variants:
            return [(None, self.split.speculative)]
        return [(v.label, v.launch) for v in self.variants]


@dataclass(frozen=True, slots=True)
class AbEvents:
    """Callbacks along an A/B, for whoever shows its progress (all optional)."""

    say: Callable[[str], None] = lambda _line: None
    progress: Callable[[Side, int, Progress], None] = lambda _side, _c, _p: None
    launched: Callable[[ServerProcess], None] = lambda _server: None


def url_for(split: Split) -> str:
    """The launched server's base URL."""
    host, port = address(split.speculative, split.kind)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def target_for(split: Split, base: Target) -> Target:
    """The launched server's address, with the connection options of `base`."""
    return dataclasses.replace(base, url=url_for(split))


async def run_ab(
    plan: AbPlan, events: AbEvents | None = None, *, wall: Callable[[], float] = time.time
) -> list[AbRun]:
    """Run every round and return its benches, complete; nothing is saved (`wall`: the clock
    of the snapshots' times).

    Raises:
        LaunchFailed: A server did not come up (its port taken, it exited, it was not healthy
            in time), or exited during a bench.
        SourceError, BenchInvalid, NotABaseline: A bench failed (typed, as `take_snapshot`).
    """
    events = events or AbEvents()
    logs = plan.logs or Path(tempfile.mkdtemp(prefix="specmon-ab-"))
    private_dir(logs)
    host, port = address(plan.split.speculative, plan.split.kind)
    runs: list[AbRun] = []
    for round_ in range(1, plan.rounds + 1):
        sides: list[tuple[Side, str | None, Launch]] = [(Side.BASELINE, None, plan.split.baseline)]
        sides += [(Side.SPECULATIVE, label, launch) for label, launch in plan.speculative()]
        for side, config, launch in sides:
            if not port_free(host, port):
                raise LaunchFailed(
                    f"port {port} on {host} is taken: something already listens there; stop it "
                    "or give the server command another --port"
                )
            name = f"{side} ({config})" if config else str(side)
            server = ServerProcess(launch, logs / f"{len(runs):03d}-{side}-{round_}.log")
            events.say(f"Round {round_}/{plan.rounds}: starting the {name} server")
            server.start()
            try:
                events.launched(server)
                await server.wait_healthy(plan.target.url, plan.health_timeout_s)
                events.say(f"Round {round_}/{plan.rounds}: the {name} server is up")
                for concurrency in plan.concurrencies:
                    label = f"ab {name}, {streams(concurrency)}, round {round_}"
                    snapshot = await bench_level(
                        plan, server, side, label, concurrency, events, wall=wall
                    )
                    runs.append(AbRun(round_, side, snapshot, config))
            finally:
                server.stop()
    return runs


async def bench_level(
    plan: AbPlan,
    server: ServerProcess,
    side: Side,
    label: str,
    concurrency: int,
    events: AbEvents,
    *,
    wall: Callable[[], float] = time.time,
) -> Snapshot:
    """One bench of a launched server at one concurrency (run again once if refused as
    untrustworthy: `take_snapshot`).

    Raises:
        LaunchFailed: The server exited during it.
        SourceError, BenchInvalid, NotABaseline: It failed (typed, as `take_snapshot`).
    """
    protocol = dataclasses.replace(plan.protocol, concurrency=concurrency)
    kind = SnapshotKind.BASELINE if side == Side.BASELINE else SnapshotKind.RUN
    try:
        return await take_snapshot(
            plan.target,
            protocol,
            kind=kind,
            label=label,
            on_progress=lambda p: events.progress(side, concurrency, p),
            say=events.say,
            wall=wall,
        )
    except SourceError:
        code = await server.exited_within()
        if code is not None:  # the server died under the bench: say so, not the symptom
            raise LaunchFailed(
                f"the {side} server exited with status {code} during the bench at "
                f"{concurrency} streams; its log: {server.log}"
            ) from None
        raise
