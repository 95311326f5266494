"""The dashboard's baseline: where it came from, whether its server is still the lifetime it
measured, and its View beside the recent probes.

The baseline server is the watched server itself when the baseline was taken at its address,
else another one (`--baseline-url`, or the address a stored baseline names), which the session
samples for this class (`server_url`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from specmon.analysis.comparison import compare
from specmon.analysis.conditions import Conditions
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.validity import (
    LifetimeCheck,
    LifetimeState,
    Validity,
    baseline_validity,
    lifetime_check,
    lifetime_of,
    relaunched_for_speculation,
)
from specmon.model import (
    GpuState,
    Protocol,
    Sample,
    ServerInfo,
    ServerMetrics,
    Snapshot,
    SourceName,
)
from specmon.session.baselines import BaselineOrigin
from specmon.session.tracker import Change, ServerTracker
from specmon.session.view import BaselineView, BenchView

NOT_READ_YET = LifetimeCheck(LifetimeState.UNVERIFIED, "the baseline server has not been read yet")
JUST_TAKEN = LifetimeCheck(LifetimeState.SAME, "taken just now")
NOT_SAMPLED = LifetimeCheck(
    LifetimeState.UNVERIFIED, "its server is not the one the dashboard samples for baselines"
)
RELAUNCH_UNREAD = LifetimeCheck(
    LifetimeState.UNVERIFIED, "the server restarted; its new launch's info is not read yet"
)
"""A baseline taken at the watched server's address, between a restart its counters or process
showed and its new info (a relaunch with speculation keeps the baseline; one without does not)."""


def scraped_at(sample: Sample) -> float | None:
    """Wall time of a sample's /metrics reading (its monotonic time moved onto the wall)."""
    reading = sample.readings.get(SourceName.METRICS)
    if reading is None or reading.at is None:
        return None
    return sample.wall - (sample.t - reading.at)


class BaselineState:
    """The current baseline and the evidence about its server's lifetime."""

    def __init__(self, watched_url: str, protocol: Protocol, *, max_age_s: float) -> None:
        """Args:
        watched_url: The dashboard's server.
        protocol: The live probes' protocol (a baseline of another one does not apply).
        max_age_s: Older baselines are stale.
        """
        self.watched_url = watched_url
        self.protocol = protocol
        self.max_age_s = max_age_s
        self.snapshot: Snapshot | None = None
        self.origin: BaselineOrigin | None = None
        self.chosen_by: str | None = None
        """Which part of the baseline rule picked a stored baseline, and what else was
        considered (`BaselineChoice.described`); None for one taken now."""
        self.server = ServerTracker("baseline server")
        self.followed: str | None = None
        """The URL `server` follows (the session samples it: `follow`)."""
        self.waiting = False
        self.watched_current = True
        """Whether the watched server's info is of its current lifetime (`LiveState` keeps it:
        `ServerTracker.info_current`)."""
        self._restart: LifetimeCheck | None = None
        """A restart seen since the baseline: it stays, whatever the counters do later."""
        self._observed: LifetimeCheck = NOT_READ_YET
        self._scraped_at: float | None = None
        """Wall time of the baseline server's latest /metrics scrape."""

    def set(self, snapshot: Snapshot, origin: BaselineOrigin) -> None:
        """A new baseline: the evidence about the old one's server is dropped, and what is
        known of its server now is taken at once."""
        self.snapshot, self.origin = snapshot, origin
        self.chosen_by = None
        self._restart = None
        self._observed = NOT_READ_YET if origin == BaselineOrigin.STORE else JUST_TAKEN
        self.waiting = False
        if self.followed == snapshot.url and self.server.info is not None:
            self.observe(
                self.server.info,
                self.server.window.latest,
                self.server.started_at,
                scraped_at=self._scraped_at,
            )

    def follow(self, url: str | None) -> None:
        """The session samples another baseline server now: its tracker starts afresh."""
        if url != self.followed:
            self.followed = url
            self.server = ServerTracker("baseline server")

    @property
    def server_url(self) -> str | None:
        """The baseline server to sample, when it is not the watched server."""
        url = self.snapshot.url if self.snapshot is not None else None
        return url if url is not None and url != self.watched_url else None

    def observe(
        self,
        info: ServerInfo | None,
        metrics: ServerMetrics | None,
        started_at: float | None,
        *,
        scraped_at: float | None = None,
        error: str | None = None,
    ) -> None:
        """The baseline server's latest state, as evidence for `lifetime` (the one decision the
        events log, the panel and the exporter share).

        A scrape older than the baseline (`scraped_at`, wall time) says nothing about the server
        since: its counters would read lower than those the bench ended with.
        """
        if self.snapshot is None:
            return
        if scraped_at is not None and scraped_at < self.snapshot.created_at:
            return
        if info is None:
            self._observed = lifetime_check(self.snapshot.lifetime, None, unreachable=error)
            return
        check = lifetime_check(self.snapshot.lifetime, lifetime_of(info, metrics, started_at))
        self._observed = check
        if check.state == LifetimeState.RESTARTED and self._restart is None:
            self._restart = check

    def on_server_sample(self, sample: Sample) -> list[Change]:
        """A tick of the (separate) baseline server's sampler: its own events (restarts,
        errors); whether the baseline still applies is `lifetime`'s to say."""
        changes = self.server.update(sample)
        if any(c.restart for c in changes) and self.snapshot is not None and not self._restart:
            self._restart = LifetimeCheck(
                LifetimeState.RESTARTED, "the baseline server restarted since"
            )
        self._scraped_at = scraped_at(sample)
        if self.server.down_since is not None:
            # Down now: its last answers say nothing of it since (`check`, which reads it
            # afresh, calls it unverified too); coming back, the tracker calls it a restart.
            self.observe(None, None, None, error=sample.error(SourceName.INFO))
        else:
            error = sample.error(SourceName.INFO) if self.server.info is None else None
            self.observe(
                self.server.info,
                self.server.window.latest,
                self.server.started_at,
                scraped_at=self._scraped_at,
                error=error,
            )
        return changes

    def lifetime(self, watched: ServerInfo | None) -> LifetimeCheck:
        """What is known of the baseline server's lifetime now: the one decision the panel,
        the exporter and the events log (`LiveState`) show."""
        here = self._here(self.snapshot.url, watched) if self.snapshot is not None else None
        return here or self._restart or self._observed

    def lifetime_for(self, snapshot: Snapshot, watched: ServerInfo) -> LifetimeCheck:
        """What is known of the lifetime of another baseline's server (a category's,
        `CategoryBaselines`): as `lifetime` where it was taken at the watched server's address,
        from the baseline server's latest reading where the dashboard samples it, else
        unverified."""
        here = self._here(snapshot.url, watched)
        if here is not None:
            return here
        if snapshot.url == self.followed and self.server.info is not None:
            return lifetime_check(
                snapshot.lifetime,
                lifetime_of(self.server.info, self.server.window.latest, self.server.started_at),
            )
        return NOT_SAMPLED

    def known_lifetime(self, snapshot: Snapshot, watched: ServerInfo) -> LifetimeCheck:
        """What the session knows of a stored baseline's server's lifetime, for the baseline
        rule's lookup: `lifetime` for the current baseline, `lifetime_for` for another."""
        current = self.snapshot
        if current is not None and snapshot.id is not None and snapshot.id == current.id:
            return self.lifetime(watched)
        return self.lifetime_for(snapshot, watched)

    def _here(self, url: str, watched: ServerInfo | None) -> LifetimeCheck | None:
        """A baseline taken at the watched server's address: not known until a restarted
        server's new info is read, relaunched for speculation by design when it speculates;
        None elsewhere."""
        if url != self.watched_url:
            return None
        if not self.watched_current:
            return RELAUNCH_UNREAD
        if watched is not None and watched.speculative is not None:
            return relaunched_for_speculation()
        return None

    def validity(
        self,
        watched: ServerInfo | None,
        now: float,
        gpu: Callable[[], GpuState | None] | None = None,
        conditions: Conditions | None = None,
    ) -> Validity | None:
        """Whether the baseline applies to the watched server: needs its info, not a probe.

        Args:
            watched: The watched server's info.
            now: The wall clock now.
            gpu: The GPUs' state now (`LiveState.gpus_now`), read only when there is a
                baseline to check it against; None: the GPUs are not compared.
            conditions: The recent probes' conditions, compared with the baseline's runs';
                None: no probe yet.
        """
        if self.snapshot is None or watched is None:
            return None
        return baseline_validity(
            self.snapshot,
            watched,
            now=now,
            lifetime=self.lifetime(watched),
            max_age_s=self.max_age_s,
            protocol=self.protocol,
            gpu=gpu() if gpu is not None else None,
            conditions=conditions,
        )

    def view(
        self,
        now_wall: float,
        recent: Pooled,
        validity: Validity | None,
        progress: BenchView | None,
        why_none: str | None = None,
        *,
        plain: bool = False,
    ) -> BaselineView:
        """The Baseline panel's values: base and now pooled, the comparison of those two (or
        `why_none`: why the store has none); none on a `plain` server (without speculation: it
        would be compared with itself)."""
        snapshot = self.snapshot
        if snapshot is None:
            return BaselineView(
                False,
                None,
                None,
                None,
                None,
                None,
                0,
                None,
                None,
                None,
                0,
                None,
                None,
                progress,
                self.waiting,
                why_none,
            )
        base = pool(snapshot.runs)
        speeds: Sequence[float] = [r.decode_tok_s for r in snapshot.runs if r.decode_tok_s]
        return BaselineView(
            present=True,
            snapshot_id=snapshot.id,
            url=snapshot.url,
            tok_s=base.decode_tok_s,
            tok_s_min=min(speeds) if speeds else None,
            tok_s_max=max(speeds) if speeds else None,
            runs=len(snapshot.runs),
            age_s=max(0.0, now_wall - snapshot.created_at),  # the wall clock may move back
            origin=self.origin.value if self.origin else None,
            current_tok_s=recent.decode_tok_s,
            current_runs=recent.runs,
            comparison=None if plain else compare(recent, base),
            validity=validity,
            progress=progress,
            waiting=self.waiting,
            chosen_by=self.chosen_by or (self.origin.value if self.origin else None),
        )
