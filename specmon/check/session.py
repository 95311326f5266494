"""`CheckSession`: `check`'s baseline chosen by a `ServerSession`, as the dashboard's, the
fleet's, the exporter's and `--once`'s is: the server's first info goes in as the session's
first sample, its `StoreBaseline` looks the baseline up then, and the choice (or why none
applies) is the session's (`baseline_choice`, the View's baseline).

What `check` gives the one rule that a watching session does not: any max tokens (its probe
follows the baseline's, the user's size first: `check_wanted`), a baseline named by
`--baseline ID|URL`, and every candidate's server read first (a one-shot check cannot wait to
sample them in turn). The session is fed by `check` alone: it reads the server itself
(`run_check`), so the session's feed samples nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import MappingProxyType

from specmon.analysis.baseline_rule import Pin
from specmon.analysis.validity import LifetimeCheck
from specmon.config import FleetTarget, MonitorConfig
from specmon.errors import SpecmonError
from specmon.model import Protocol, Reading, Sample, ServerInfo, Snapshot, SourceName
from specmon.session.baselines import (
    NOT_CHECKED,
    BaselineLookup,
    LifetimeOf,
    LifetimeReader,
    candidate_lifetimes,
    candidates_of,
    check_lifetime,
    check_wanted,
    lookup_baseline,
)
from specmon.session.feed import FeedSink, NoServerFeed
from specmon.session.server_session import ServerSession
from specmon.storage.store import Store
from specmon.target import Target


class CheckSession(ServerSession):
    """`check`'s server as a session of its own, for the store's baseline (`first_info`)."""

    def __init__(
        self,
        server: Target,
        store: Store | None,
        *,
        pin: Pin | None = None,
        tokens: int | None = None,
        max_age_s: float,
        wall: Callable[[], float] = time.time,
        read: LifetimeReader = candidate_lifetimes,
    ) -> None:
        """Args:
        server: The checked server (its credentials reach the baseline servers).
        store: Where baselines are looked up; None: none is.
        pin: The baseline the user named (`--baseline ID|URL`).
        tokens: The probe size the user asked for, if any: baselines of it come first.
        max_age_s: Older baselines are stale.
        wall: Wall clock.
        read: How the candidates' servers are read (`candidate_lifetimes`).
        """
        config = MonitorConfig(url=server.url, probe=False, max_age=max_age_s)
        super().__init__(FleetTarget(server.url), config, _Unfed(), store, wall=wall)
        self.server = server
        self.pin = pin
        self.tokens = tokens
        self._read = read
        self._known: LifetimeOf = lambda _snapshot: NOT_CHECKED
        self._read_ids: set[int] = set()
        self._failed: SpecmonError | None = None

    async def first_info(self, info: ServerInfo) -> BaselineLookup:
        """The server's info as `check` read it: every candidate's server is read, then the info
        is the session's first sample, at which the session looks its baseline up.

        Returns:
            The session's choice (`baseline_choice`).

        Raises:
            StoreError: The store could not be read.
        """
        if self.store is None:
            return BaselineLookup(None, pinned=self.pin.text() if self.pin else None)
        candidates = candidates_of(self.store, info, self.pin)
        self._known = await self._read(candidates, self.server)
        self._read_ids = {s.id for s in candidates if s.id is not None}
        reading = Reading(info, 0.0, 1)
        self.sample(Sample(0.0, self.wall(), MappingProxyType({SourceName.INFO: reading})))
        if self._failed is not None:
            raise self._failed
        choice = self.baseline_choice
        assert choice is not None  # looked up at the first info, or failed (above)
        return choice

    async def baseline_lifetime(self, baseline: Snapshot) -> LifetimeCheck:
        """Whether the baseline's server is still the lifetime it measured: as read for the
        choice (so the validity is judged on what the rule ranked it by, and a server that
        does not answer is waited for once); read now for one that was not a candidate."""
        if baseline.id in self._read_ids:
            return self._known(baseline)
        return await check_lifetime(baseline, self.server, speculative=True)

    def _store_lookup(self, store: Store, info: ServerInfo, protocol: Protocol) -> BaselineLookup:
        """The one rule under `check`'s inputs (module docstring); a store that cannot be read
        is raised from `first_info`, not only logged as a watching session's is."""
        try:
            return lookup_baseline(
                store,
                info,
                check_wanted(self.tokens),
                pin=self.pin,
                lifetime=self._known,
                now=self.wall(),
                max_age_s=self.config.max_age,
            )
        except SpecmonError as exc:
            self._failed = exc
            raise


class _Unfed(NoServerFeed):
    """The feed of a session that `check` feeds itself: it samples nothing (`check` reads the
    server and its baseline's server: `run_check`)."""

    async def run(self, sink: FeedSink) -> None:
        """Nothing to run."""
