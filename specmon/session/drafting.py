"""One server's drafting across scrapes: what it drafts now, its history, each switch, and its
figures by load.

An adaptive server changes its draft length by load (SGLang's batch-size buckets, vLLM's
Dynamic SD) and may stop drafting altogether; each interval between two scrapes is counted by
`analysis.drafting`, and a new setting that holds for `HOLD` intervals is one switch.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from specmon.analysis.by_load import LoadBand, LoadInterval, by_load, load_interval
from specmon.analysis.drafting import Drafting, DraftSteps, draft_level, draft_steps, drafting
from specmon.model import ServerMetrics
from specmon.wording import DRAFTING_OFF, draft_level_text

HOLD = 2
"""Intervals a new setting must hold before it counts as a switch: a scrape that caught the
server mid-switch, half one setting and half the other, is not a switch of its own."""


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
        self.intervals: deque[tuple[float, DraftSteps]] = deque(maxlen=MAX_INTERVALS)
        self.loads: deque[tuple[float, LoadInterval]] = deque(maxlen=MAX_INTERVALS)
        """Every interval with its load (`analysis.by_load`), drafting or not."""
        self.level: int | None = None
        """The setting the server drafts at, once it held `HOLD` intervals."""
        self.switches = 0
        """Switches seen in this lifetime."""
        self._last: ServerMetrics | None = None
        self._last_t: float | None = None
        self._candidate: tuple[int, int] | None = None
        """(a new setting, the intervals it has held so far)."""

    def reset(self) -> None:
        """A new lifetime: nothing before it describes the server."""
        self.intervals.clear()
        self.loads.clear()
        self.level = self._last = self._candidate = None
        self._last_t = None
        self.switches = 0

    def add(self, t: float, metrics: ServerMetrics) -> Switch | None:
        """A new scrape at monotonic `t`; the switch it completes, if any."""
        before, self._last = self._last, metrics
        start, self._last_t = self._last_t, t
        part = draft_steps(before, metrics) if before is not None else None
        for kept in (self.intervals, self.loads):
            while kept and kept[0][0] < t - self.history_s:
                kept.popleft()
        load = load_interval(before, metrics, t - start) if before and start is not None else None
        if load is not None:
            self.loads.append((t, load))
        if part is None:
            return None
        self.intervals.append((t, part))
        figures = drafting([part])
        return None if figures is None else self._settle(draft_level(figures), metrics)

    def _settle(self, level: int, metrics: ServerMetrics) -> Switch | None:
        if level == self.level:
            self._candidate = None
            return None
        held = self._candidate[1] + 1 if self._candidate and self._candidate[0] == level else 1
        self._candidate = (level, held)
        if held < HOLD and self.level is not None:
            return None
        previous, self.level, self._candidate = self.level, level, None
        if previous is None:
            return None  # the first setting seen is where the server is, not a switch
        self.switches += 1
        return Switch(previous, level, metrics.num_running_reqs)

    def now(self, t: float, span: float) -> Drafting | None:
        """The drafting over about the last `span` seconds before `t`."""
        return drafting(p for at, p in self.intervals if at > t - span)

    def by_load(self) -> tuple[LoadBand, ...]:
        """The server's figures by its running requests, over the history kept."""
        return by_load(load for _, load in self.loads)

    def history(self, t: float, step_s: float) -> tuple[float, ...]:
        """Draft tokens per decode step (`Drafting.per_step`), one point per `step_s` of the
        history, oldest first; a step without decoding repeats no point."""
        points: dict[int, list[DraftSteps]] = {}
        for at, part in self.intervals:
            points.setdefault(int(at // step_s), []).append(part)
        current = int(t // step_s)
        out = []
        for step in sorted(points):
            figures = drafting(points[step]) if step < current else None
            if figures is not None:
                out.append(figures.per_step)
        return tuple(out)
