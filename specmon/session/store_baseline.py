"""When a watched server's baseline is looked up in the store: its session's rule
(`ServerSession`), for the dashboard and every server of a fleet (and so the exporter) alike;
the UI only renders what it finds.

The lookup itself is `lookup_baseline`, the one `check` and `whatif` make, here under the live
probe's protocol; what keeps the nearest baseline from applying goes to the View
(`LiveState.no_baseline`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from specmon.errors import SpecmonError
from specmon.model import Protocol, ServerInfo
from specmon.session.baselines import BaselineLookup, BaselineOrigin, lookup_baseline
from specmon.session.live import LiveState
from specmon.storage.store import Store

Lookup = Callable[[ServerInfo, Protocol], BaselineLookup]
"""How a server's baseline is looked up: `lookup_baseline` on a store, bar the store."""

STORE_LOOKUP_EVERY_S = 60.0
"""While no baseline applies, the store is asked again this often (a `specmon bench` of the
baseline server elsewhere saves one)."""


class StoreBaseline:
    """Looks the watched server's baseline up: at its first server info, then every
    STORE_LOOKUP_EVERY_S of sample time while none applies; a newer one that matches replaces a
    baseline that no longer applies."""

    def __init__(
        self, store: Store | None, live: LiveState, *, lookup: Lookup | None = None
    ) -> None:
        """Args:
        store: Where baselines are saved; None (and no `lookup`): nothing is looked up.
        live: The watched server's state: its info, protocol and baseline.
        lookup: How the store is asked, when not by `lookup_baseline` on `store`: recorded
            (`--record`), or answered from a recording (`specmon replay`).
        """
        self.lookup = lookup or (None if store is None else partial(lookup_baseline, store))
        self.live = live
        self._looked_up_at: float | None = None
        self._categories_at: float | None = None

    def update(self, t: float, wall: float, *, say: bool = True) -> BaselineLookup | None:
        """Look the baseline up when it is due (at every sample of the watched server).

        A baseline found that is not the current one is set (`BaselineOrigin.STORE`); when none
        is, the View says why (`LiveState.no_baseline`).

        Args:
            t: The sample's monotonic time (the cadence).
            wall: The wall clock now.
            say: Say in the events log why there is none (not when one is taken at once).

        Returns:
            The lookup made; None when none was due, or the store failed (said in the log).
        """
        info = self.live.server.info
        if info is None or self.lookup is None or self.live.bench is not None:
            return None
        self._update_categories(t, wall, info)
        if self._looked_up_at is not None:
            validity = self.live.baseline.validity(info, wall)
            if validity is not None and validity.valid:
                return None
            if t - self._looked_up_at < STORE_LOOKUP_EVERY_S:
                return None
        self._looked_up_at = t
        try:
            lookup = self.lookup(info, self.live.protocol)
        except SpecmonError as exc:
            self.live.log(wall, "error", f"store: {exc}")
            return None
        found, current = lookup.baseline, self.live.baseline.snapshot
        if found is None:
            self.live.no_baseline(wall, lookup.why_none(), say=say)
        elif current is None or found.id != current.id:
            self.live.set_baseline(wall, found, BaselineOrigin.STORE)
        now = self.live.baseline.snapshot
        if found is not None and now is not None and now.id == found.id:
            self.live.baseline.chosen_by = lookup.described()
        return lookup

    def _update_categories(self, t: float, wall: float, info: ServerInfo) -> None:
        """Each category's baseline, beside a probe rotating several: at the first info, then
        every STORE_LOOKUP_EVERY_S while a category has none that applies."""
        bases = self.live.category_baselines
        if not bases.active or self.lookup is None:
            return
        if self._categories_at is not None:
            if t - self._categories_at < STORE_LOOKUP_EVERY_S:
                return
            gpu = self.live.gpus_now()
            checks = [
                bases.validity(
                    category, info, wall, lambda s: self.live.baseline.lifetime_for(s, info), gpu
                )
                for category in bases.protocols
            ]
            if all(check is not None and check.valid for check in checks):
                return
        self._categories_at = t
        try:
            bases.look_up(self.lookup, info)
        except SpecmonError as exc:
            self.live.log(wall, "error", f"store: {exc}")

    def again(self) -> None:
        """Look up at the next sample (another target's baseline is being taken)."""
        self._looked_up_at = None
        self._categories_at = None
