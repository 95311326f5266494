"""One server's drafting across scrapes: what it drafts now, its history, each switch, and its
figures by load.

An adaptive server changes its draft length by load (SGLang's batch-size buckets, vLLM's
Dynamic SD) and may stop drafting altogether; each interval between two scrapes is counted by
`analysis.drafting`, and a new setting that holds for `HOLD_S` seconds is one switch.

No server counts its switches (SGLang's tier-switch counter, PR #23942, was closed): each
reader sees a gauge (SGLang's last batch's setting) or counters at its own scrape times. A
switch counted per scrape depends on the reader's phase (a 1 s dip is two scrapes for one reader
and one for another); a switch counted by how long the new setting was seen does not, as long as
the change is shorter than `HOLD_S` or longer than `HOLD_S` plus the reader's scrape interval.
A shorter change is a transient, told apart but never a switch.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace

from specmon.analysis.by_load import LoadBand, LoadInterval, by_load, load_interval
from specmon.analysis.drafting import Drafting, DraftSteps, draft_level, draft_steps, drafting
from specmon.model import ServerMetrics
from specmon.wording import DRAFTING_OFF, draft_level_text

HOLD_S = 5.0
"""Seconds a new setting must be seen for, from the first scrape showing it to the latest, before
it counts as a switch: a dip shorter than this is never a switch on any surface, whatever each
reader's scrape interval and phase; one that holds for longer than this plus the reader's scrape
interval is one switch on every surface. Between the two, a reader's phase decides (the limit
of reading a gauge: docs/metrics.md, "Switches")."""


@dataclass(frozen=True, slots=True)
class Switch:
    """A change of the setting the server drafts at."""

    before: int
    after: int
    running: float | None
    """The running requests when it was seen (the load it switched at)."""

    @property
    def text(self) -> str:
        """For the events log and `check`: "drafting k 3 → off (speculation off at this load;
        16 running)"."""
        load = f"{self.running:.0f} running" if self.running is not None else ""
        why = DRAFTING_OFF if self.after == 0 else ""
        detail = "; ".join(part for part in (why, load) if part)
        tail = f" ({detail})" if detail else ""
        return f"drafting {draft_level_text(self.before)} → {draft_level_text(self.after)}{tail}"


MAX_INTERVALS = 600
"""At most this many intervals kept (twice the 5 minutes at the default 1 s scrape): a faster
scrape (the CI soak's 50 a second) would otherwise keep 15,000 of each, a growing heap."""


class DraftingTracker:
    """The intervals of the last `history_s` seconds (at most `MAX_INTERVALS`) and the setting
    they ran at."""

    def __init__(self, history_s: float) -> None:
        self.history_s = history_s
        self.intervals: deque[tuple[float, DraftSteps, bool]] = deque(maxlen=MAX_INTERVALS)
        """(scrape time, the interval's drafting, whether it spans a change of setting)."""
        self.loads: deque[tuple[float, LoadInterval]] = deque(maxlen=MAX_INTERVALS)
        """Every interval with its load (`analysis.by_load`), drafting or not."""
        self.level: int | None = None
        """The setting the server drafts at, once seen for `HOLD_S` seconds."""
        self.switches = 0
        """Switches seen in this lifetime."""
        self.transients = 0
        """Settings seen for less than `HOLD_S` before the server went back: not switches."""
        self._last: ServerMetrics | None = None
        self._last_t: float | None = None
        self._candidate: tuple[int, float] | None = None
        """(a new setting, the time of the first scrape that showed it)."""
        self._seen: int | None = None
        """The setting of the latest interval (settled or not)."""
        self._changed_at: float | None = None
        """The end of the latest interval whose setting differed from the one before."""

    def reset(self) -> None:
        """A new lifetime: nothing before it describes the server."""
        self.intervals.clear()
        self.loads.clear()
        self.level = self._last = self._candidate = self._seen = None
        self._last_t = self._changed_at = None
        self.switches = self.transients = 0

    def add(self, t: float, metrics: ServerMetrics) -> Switch | None:
        """A new scrape at monotonic `t`; the switch it completes, if any."""
        before, self._last = self._last, metrics
        start, self._last_t = self._last_t, t
        part = draft_steps(before, metrics) if before is not None else None
        for kept in (self.intervals, self.loads):
            while kept and kept[0][0] < t - self.history_s:
                kept.popleft()
        figures = drafting([part]) if part is not None else None
        level = draft_level(figures) if figures is not None else None
        # An interval whose setting differs from the one before spans the change: half one
        # setting, half the other, binned nowhere and left out of "now".
        transition = level is not None and self._seen is not None and level != self._seen
        if transition:
            self._changed_at = t
        load = load_interval(before, metrics, t - start) if before and start is not None else None
        if load is not None:
            self.loads.append((t, replace(load, transition=transition)))
        if part is None or level is None:
            return None
        self.intervals.append((t, part, transition))
        self._seen = level
        return self._settle(t, level, metrics)

    def _settle(self, t: float, level: int, metrics: ServerMetrics) -> Switch | None:
        if level == self.level:
            if self._candidate is not None:
                self.transients += 1  # back before the new setting held `HOLD_S`
            self._candidate = None
            return None
        if self._candidate is None or self._candidate[0] != level:
            if self._candidate is not None:
                self.transients += 1
            self._candidate = (level, t)
        if self.level is not None and t - self._candidate[1] < HOLD_S:
            return None
        previous, self.level, self._candidate = self.level, level, None
        if previous is None:
            return None  # the first setting seen is where the server is, not a switch
        self.switches += 1
        return Switch(previous, level, metrics.num_running_reqs)

    def now(self, t: float, span: float) -> Drafting | None:
        """The drafting over about the last `span` seconds before `t`, since the latest change
        of setting: the intervals of the setting before it, and the one spanning it, would
        mix two settings (the latter only while no other interval follows it)."""
        since = max(t - span, self._changed_at or -math.inf)
        recent = [(p, changed) for at, p, changed in self.intervals if at >= since]
        settled = [p for p, changed in recent if not changed]
        return drafting(settled or [p for p, _ in recent])

    def transition_seconds(self) -> float:
        """Time of the history kept in intervals spanning a change of setting (not binned)."""
        return sum(load.seconds for _, load in self.loads if load.transition)

    def by_load(self) -> tuple[LoadBand, ...]:
        """The server's figures by its running requests, over the history kept."""
        return by_load(load for _, load in self.loads)

    def history(self, t: float, step_s: float) -> tuple[float, ...]:
        """Draft tokens per decode step (`Drafting.per_step`), one point per `step_s` of the
        history, oldest first; a step without decoding repeats no point."""
        points: dict[int, list[DraftSteps]] = {}
        for at, part, _ in self.intervals:
            points.setdefault(int(at // step_s), []).append(part)
        current = int(t // step_s)
        out = []
        for step in sorted(points):
            figures = drafting(points[step]) if step < current else None
            if figures is not None:
                out.append(figures.per_step)
        return tuple(out)
