"""What the server drafts while `check` probes it: /metrics scraped after every probe and counted
as the dashboard counts it (`session.drafting.DraftingTracker`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from specmon.analysis.acceptance import draft_length
from specmon.analysis.drafting import Drafting
from specmon.check.probing import ProbeRunner
from specmon.errors import SourceError
from specmon.model import Protocol, ServerInfo, Snapshot
from specmon.reports.check_report import CheckReport
from specmon.session.drafting import DraftingTracker
from specmon.sources.backends import Connection
from specmon.wording import DRAFTING_OFF, drafting_brief


@dataclass(slots=True)
class DraftingWatch:
    """/metrics after every probe, counted as the dashboard counts them (`DraftingTracker`); its
    first figure and every switch a finding."""

    connection: Connection
    report: CheckReport
    clock: Callable[[], float]
    tracker: DraftingTracker = field(default_factory=lambda: DraftingTracker(math.inf))

    def __post_init__(self) -> None:
        assert self.report.metrics is not None  # the first scrape: the window's start
        self.tracker.add(self.clock(), self.report.metrics)

    def around(self, run_probe: ProbeRunner) -> ProbeRunner:
        """`run_probe`, followed by a scrape."""

        async def probe_and_scrape(protocol: Protocol) -> Snapshot:
            snapshot = await run_probe(protocol)
            await self.scrape()
            return snapshot

        return probe_and_scrape

    async def scrape(self) -> None:
        try:
            metrics = await self.connection.metrics()
        except SourceError:
            return  # said by the first scrape's finding if it persists; figures stay as they were
        self.report.metrics_after = metrics
        first = self.report.drafting is None
        switch = self.tracker.add(self.clock(), metrics)
        self.report.drafting = self.tracker.now(self.clock(), math.inf)
        if switch is not None:
            self.report.switches.append(switch.text)
            self.report.add("info", switch.text)
        drafting = self.report.drafting
        if first and drafting is not None:
            self.report.add(
                "info" if drafting.off else "ok",
                describe_drafting(drafting, self.report.server, metrics.num_running_reqs),
            )


def describe_drafting(drafting: Drafting, info: ServerInfo | None, running: float | None) -> str:
    """ "drafting now: k 3.0 100% (configured k 3; server gauges, 16 running)"."""
    configured = draft_length(info) if info is not None else None
    brief = drafting_brief(drafting.draft_length, drafting.duty_cycle, drafting.off)
    parts = [
        f"configured k {configured}" if configured is not None else "",
        f"server {drafting.source}",
        f"{running:.0f} running" if running is not None else "",
    ]
    text = f"drafting now: {brief} ({', '.join(p for p in parts if p)})"
    return text + (f" — {DRAFTING_OFF}" if drafting.off else "")
