"""Baseline decisions shared by every surface: where a baseline came from, finding one (or the
nearest, with what keeps it from applying), and checking its server's lifetime over the network.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from specmon.analysis.validity import (
    LifetimeCheck,
    Nearest,
    fingerprint,
    lifetime_check,
    lifetime_of,
    nearest_baseline,
    relaunched_for_speculation,
)
from specmon.errors import SourceError, SpecmonError
from specmon.model import Lifetime, Protocol, ServerInfo, Snapshot
from specmon.sources.http import make_client
from specmon.sources.telemetry import open_telemetry
from specmon.sources.workers import open_connection
from specmon.storage.store import Store
from specmon.target import Target


class BaselineOrigin(StrEnum):
    """How the dashboard came by its baseline."""

    BASELINE_SERVER = "the baseline server"
    """Taken now from `--baseline-url`."""
    THIS_SERVER = "this server, speculation off"
    """Taken now from the watched server while it ran without speculation."""
    STORE = "from the store"
    """A saved baseline whose configuration matches."""
    RELAUNCHED = "this server, relaunched without speculation"
    """Taken now by relaunching the server specmon launched (`specmon launch`) without its
    speculative flags, then relaunching it with them."""


@dataclass(frozen=True, slots=True)
class BaselineLookup:
    """The store's answer for a server: a matching baseline, or the nearest one."""

    baseline: Snapshot | None
    nearest: Nearest | None = None
    """When none matches: the closest plain snapshot and what differs."""

    def why_none(self) -> str:
        """ "no baseline applies: #1 (http://…) was taken with max_tokens 500, the probe uses
        256", or "no baseline in the store": one line, what every surface says."""
        if self.nearest is None:
            return "no baseline in the store"
        return f"no baseline applies: {_nearest_text(self.nearest)}"


def lookup_baseline(store: Store, info: ServerInfo, protocol: Protocol | None) -> BaselineLookup:
    """The newest baseline of this configuration taken with the probe's protocol, or the
    nearest: the one lookup of every surface (the dashboard, the fleet, the exporter, `check`,
    `whatif`).

    Args:
        store: The snapshot store.
        info: The speculative server's info (its configuration apart from speculation).
        protocol: The probe's protocol: a baseline applies only under the same max tokens,
            temperature and prompt (docs/design.md §5). None where the probe is yet to be sized and
            takes the baseline's protocol (`check`, `whatif`: one bench each).

    Raises:
        StoreError: The store could not be read.
    """
    found = store.latest_baseline(fingerprint(info.args), protocol)
    if found is not None:
        return BaselineLookup(found)
    plain = [s for s in store.list() if s.server.speculative is None]
    return BaselineLookup(None, nearest_baseline(plain, info, protocol))


def _nearest_text(nearest: Nearest) -> str:
    """ "#3 (http://…) differs in flag mem_fraction_static", "#1 (http://…) was taken with
    max_tokens 500, the probe uses 256"."""
    parts = []
    if nearest.differences:
        parts.append("differs in " + ", ".join(nearest.differences))
    if nearest.protocol:
        parts.append("was taken with " + "; ".join(nearest.protocol))
    what = " and ".join(parts) or "differs in nothing named"
    return f"#{nearest.snapshot.id} ({nearest.snapshot.url}) {what}"


async def observe_lifetime(target: Target) -> Lifetime:
    """A server's launch markers now: its info, its /metrics if served, its process start when
    it runs here (psutil) or an agent reports it.

    Raises:
        SourceError: The server could not be read (typed).
    """
    async with open_connection(target, make_client) as connection:
        info = await connection.info()
        try:
            metrics = await connection.metrics()
        except SourceError:
            metrics = None  # off: the process start or the args must do
        if metrics is not None and metrics.down_workers:
            metrics = None  # a router's sums short of a worker would read as counters gone down
    started_at = None
    with contextlib.suppress(SpecmonError):  # context only: no start time then
        telemetry = await open_telemetry(target.url, gpus=False)
        try:
            reading = await telemetry.read()
            if reading.server_process is not None:
                started_at = reading.server_process.start_time
        finally:
            await telemetry.aclose()
    return lifetime_of(info, metrics, started_at)


async def check_lifetime(baseline: Snapshot, server: Target, speculative: bool) -> LifetimeCheck:
    """Whether `baseline`'s server is still the lifetime it measured.

    Args:
        baseline: The baseline snapshot.
        server: The server it is compared with (its credentials reach the baseline server).
        speculative: Whether that server runs with speculation: a baseline taken at its own
            address was then taken before a relaunch, by design.
    """
    if baseline.url == server.url and speculative:
        return relaunched_for_speculation()
    try:
        observed = await observe_lifetime(server.at(baseline.url))
    except SourceError as exc:
        return lifetime_check(baseline.lifetime, None, unreachable=str(exc))
    return lifetime_check(baseline.lifetime, observed)


async def check_lifetimes(
    baselines: Iterable[Snapshot], credentials: Target
) -> Mapping[int, LifetimeCheck]:
    """`check_lifetime` of several baselines at once, each server read once (for exports).

    Args:
        baselines: Stored baselines (with ids).
        credentials: Timeouts and API key for reaching their servers.
    """
    chosen = {b.id: b for b in baselines if b.id is not None}
    by_url: dict[str, Lifetime | str] = {}

    async def read(url: str) -> None:
        try:
            by_url[url] = await observe_lifetime(replace(credentials, url=url))
        except SourceError as exc:
            by_url[url] = str(exc)

    await asyncio.gather(*(read(url) for url in {b.url for b in chosen.values()}))
    checks = {}
    for snapshot_id, baseline in chosen.items():
        seen = by_url[baseline.url]
        if isinstance(seen, str):
            checks[snapshot_id] = lifetime_check(baseline.lifetime, None, unreachable=seen)
        else:
            checks[snapshot_id] = lifetime_check(baseline.lifetime, seen)
    return checks
