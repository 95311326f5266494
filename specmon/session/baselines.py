"""Baseline decisions shared by every surface: where a baseline came from, finding one in the
store by the one rule (`analysis.baseline_rule`: the nearest, with what keeps it from applying,
when none does), and checking baseline servers' lifetimes over the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from enum import StrEnum

from specmon.analysis.baseline_rule import BaselineChoice, Pin, Wanted, choose_baseline
from specmon.analysis.validity import (
    DEFAULT_MAX_AGE_S,
    LifetimeCheck,
    LifetimeState,
    Validity,
    baseline_validity,
    fingerprint,
    lifetime_check,
    lifetime_of,
    relaunched_for_speculation,
)
from specmon.errors import SourceError, SpecmonError
from specmon.model import Lifetime, Protocol, ServerInfo, Snapshot
from specmon.probe_prompts import DEFAULT_MAX_TOKENS, DEFAULT_PROMPT
from specmon.sources.http import make_client
from specmon.sources.telemetry import open_telemetry
from specmon.sources.workers import open_connection
from specmon.storage.store import Store
from specmon.target import Target, normalise_url


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


BaselineLookup = BaselineChoice
"""The store's answer for a server: `analysis.baseline_rule`'s choice, or the nearest."""

NOT_CHECKED = LifetimeCheck(LifetimeState.UNVERIFIED, "the baseline server was not checked")
"""What is known of a baseline server's lifetime that nobody read."""

LifetimeOf = Callable[[Snapshot], LifetimeCheck]
"""What a surface knows of a stored baseline's server's lifetime (read over the network by
`candidate_lifetimes`, or sampled by the dashboard)."""


def check_wanted(tokens: int | None = None) -> Wanted:
    """The protocol `check` and `whatif` want of a baseline: one stream, greedy, the built-in
    prompt; any max tokens, which the probe then follows (one bench each), `tokens` (the
    user's, else the one default, the dashboard's probe's) first."""
    return Wanted(DEFAULT_PROMPT, prefer_tokens=tokens or DEFAULT_MAX_TOKENS)


def lookup_baseline(
    store: Store,
    info: ServerInfo,
    protocol: Protocol | Wanted | None,
    *,
    pin: Pin | None = None,
    lifetime: LifetimeOf | None = None,
    now: float | None = None,
    max_age_s: float = DEFAULT_MAX_AGE_S,
) -> BaselineLookup:
    """The store's baseline for a live server by the one rule (`choose_baseline`), or the
    nearest: the lookup of every live surface (the dashboard, the fleet, the exporter,
    `--once`, `check`, `whatif`).

    Args:
        store: The snapshot store.
        info: The speculative server's info (its configuration apart from speculation).
        protocol: The probe's protocol: a baseline applies only under the same max tokens,
            temperature, prompt and concurrency (docs/design.md §5); a `Wanted` leaves the max
            tokens open; None is `check_wanted()` (`check`, `whatif`: the probe follows).
        pin: The baseline the user named (`--baseline-url`, `--baseline ID|URL`).
        lifetime: What is known of each candidate's server's lifetime; None: nothing
            (unverified), so the newest applies among equals.
        now: The wall clock now (the baselines' age); None: `time.time()`.
        max_age_s: Older baselines are stale.

    Raises:
        StoreError: The store could not be read.
    """
    wanted = Wanted.of(protocol) if isinstance(protocol, Protocol) else protocol or check_wanted()
    at = time.time() if now is None else now
    known = lifetime or (lambda _s: NOT_CHECKED)
    candidates = store.list() if pin is not None and pin.snapshot_id is not None else []
    candidates = candidates or store.baselines()

    def judge(snapshot: Snapshot) -> Validity:
        return baseline_validity(
            snapshot, info, now=at, lifetime=known(snapshot), max_age_s=max_age_s
        )

    return choose_baseline(candidates, info, wanted, judge, pin=pin)


def pin_of(named: str | None) -> Pin | None:
    """`--baseline ID|URL` (or `--baseline-url`) as a pin: digits name a snapshot, anything
    else a baseline server; None when nothing is named."""
    if named is None:
        return None
    if named.isdigit():
        return Pin(snapshot_id=int(named))
    return Pin(url=normalise_url(named))


def relevant_baselines(store: Store, infos: Iterable[ServerInfo]) -> list[Snapshot]:
    """The plain snapshots of these servers' configurations: whose servers' lifetimes bear
    on the rule's choice for them."""
    keys = {fingerprint(info.args) for info in infos}
    return [s for s in store.baselines() if fingerprint(s.server.args) in keys]


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


async def candidate_lifetimes(baselines: Iterable[Snapshot], server: Target) -> LifetimeOf:
    """What each candidate's server's lifetime is now, for the rule to prefer valid baselines
    over newer ones (`check`, `whatif`): every other server read once, at once; one taken at
    the speculative server's own address was taken before its relaunch with speculation.

    Args:
        baselines: The candidates (`relevant_baselines`).
        server: The speculative server (its credentials reach the baseline servers).
    """
    others = [b for b in baselines if b.url != server.url]
    checks = await check_lifetimes(others, server) if others else {}

    def lifetime(snapshot: Snapshot) -> LifetimeCheck:
        if snapshot.url == server.url:
            return relaunched_for_speculation()
        return checks.get(snapshot.id, NOT_CHECKED) if snapshot.id is not None else NOT_CHECKED

    return lifetime


LifetimeReader = Callable[[Iterable[Snapshot], Target], Awaitable[LifetimeOf]]
"""How the candidates' servers are read (`candidate_lifetimes`; tests answer for them)."""


async def find_baseline(
    store: Store,
    info: ServerInfo,
    server: Target,
    *,
    pin: Pin | None = None,
    tokens: int | None = None,
    max_age_s: float = DEFAULT_MAX_AGE_S,
    now: float | None = None,
    read: LifetimeReader = candidate_lifetimes,
) -> BaselineLookup:
    """`whatif`'s baseline: every candidate's server read first (`candidates_of`), then the
    one rule under `check_wanted(tokens)` (any max tokens, `tokens` or the default first);
    `check` makes the same lookup through its session (`check.session.CheckSession`).

    Args:
        store: The snapshot store.
        info: The speculative server's info.
        server: The speculative server (its credentials reach the baseline servers).
        pin: The baseline the user named (`--baseline ID|URL`).
        tokens: The probe size the user asked for, if any.
        max_age_s: Older baselines are stale.
        now: The wall clock now; None: `time.time()`.
        read: How the candidates' servers are read.

    Raises:
        StoreError: The store could not be read.
    """
    lifetime = await read(candidates_of(store, info, pin), server)
    return lookup_baseline(
        store,
        info,
        check_wanted(tokens),
        pin=pin,
        lifetime=lifetime,
        now=now,
        max_age_s=max_age_s,
    )


def candidates_of(store: Store, info: ServerInfo, pin: Pin | None = None) -> list[Snapshot]:
    """The stored baselines whose servers `check` and `whatif` read before the rule: the one
    `pin` names by id, else those of `info`'s configuration (`relevant_baselines`).

    Raises:
        StoreError: The store could not be read.
    """
    if pin is not None and pin.snapshot_id is not None:
        return [s for s in store.list() if s.id == pin.snapshot_id]
    return relevant_baselines(store, [info])
