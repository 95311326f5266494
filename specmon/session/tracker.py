"""One server's lifetime as seen through its samples: restarts, config changes, outages."""

from __future__ import annotations

from dataclasses import dataclass

from specmon.analysis.validity import differing_keys
from specmon.backend_facts import find
from specmon.model import Sample, ServerInfo, ServerMetrics, SourceName
from specmon.session.drafting import DraftingTracker
from specmon.session.view import Level
from specmon.session.window import HISTORY_S, MetricsWindow
from specmon.wording import worker_down, worker_name


@dataclass(frozen=True, slots=True)
class Change:
    """Something that changed in a server's lifetime, for the events log."""

    level: Level
    text: str
    restart: bool = False
    """A new lifetime began: figures of the old one no longer describe the server."""
    config: bool = False
    """The restart brought other flags or another speculation config."""
    switch: bool = False
    """The server switched how much it drafts (an adaptive server, `session.drafting`)."""


class ServerTracker:
    """Follows one server's lifetime across samples: restarts, config changes, outages."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.window = MetricsWindow()
        self.drafting = DraftingTracker(HISTORY_S)
        self.info: ServerInfo | None = None
        self.first_seen: float | None = None
        """Monotonic time this lifetime was first seen."""
        self.down_since: float | None = None
        self.process: tuple[int, float] | None = None
        """The server process's (pid, start time) as last seen."""
        self._info_at: float | None = None
        """Monotonic time of the latest new info reading."""
        self._seqs: dict[str, int] = {}
        self._errors: dict[str, str | None] = {}
        self._workers_down: set[str] = set()
        """Behind a router: the workers the last scrape left out of the sums."""

    def update(self, sample: Sample) -> list[Change]:
        """Take a sample; returns what changed, with at most one restart per sample.

        Several signals of one restart (back after an outage, counters down, a new process, new
        args) arrive together: they make one event naming the strongest evidence.
        """
        changes: list[Change] = []
        for source, reading in sample.readings.items():
            previous_error = self._errors.get(source)
            if reading.error and reading.error != previous_error:
                changes.append(Change("error", f"{self.name} {source}: {reading.error}"))
                self._errors[source] = reading.error
            elif previous_error and reading.error is None:
                changes.append(Change("info", f"{self.name} {source}: recovered"))
                self._errors[source] = None
        watched = [s for s in (SourceName.INFO, SourceName.METRICS) if s in sample.readings]
        if all(self._errors.get(s) for s in watched) and self.down_since is None and self._seqs:
            self.down_since = sample.t
        restarts: list[str] = []
        config = False
        back = False
        info_reading = sample.readings.get(SourceName.INFO)
        if info_reading is not None and info_reading.seq != self._seqs.get(SourceName.INFO):
            self._seqs[SourceName.INFO] = info_reading.seq
            self._info_at = sample.t
            back = self.down_since is not None and sample.info is not None
            changes.extend(self._new_info(sample.info, restarts))
            config = bool(restarts)  # the new info's differences are the only restarts so far
        metrics_reading = sample.readings.get(SourceName.METRICS)
        if (
            metrics_reading is not None
            and metrics_reading.seq != self._seqs.get(SourceName.METRICS)
            and sample.metrics is not None
            and metrics_reading.at is not None
        ):
            self._seqs[SourceName.METRICS] = metrics_reading.seq
            changes.extend(self._worker_changes(sample.metrics))
            if self.window.add(metrics_reading.at, sample.metrics):
                restarts.append("its counters went down")
                self.drafting.reset()
            switch = self.drafting.add(metrics_reading.at, sample.metrics)
            if switch is not None:
                changes.append(Change("info", f"{self.name}: {switch.text}", switch=True))
        restarts.extend(self._new_process(sample))
        if back:
            self.down_since = None
            if not restarts:
                restarts.append("it was unreachable: treated as a restart")
            restarts[0] = f"back after an outage; {restarts[0]}"
        if restarts:
            changes.append(Change("warn", f"{self.name} restarted: {restarts[0]}", True, config))
            self.first_seen = sample.t
        if self.first_seen is None and self._seqs:
            self.first_seen = sample.t
        return changes

    def _worker_changes(self, metrics: ServerMetrics) -> list[Change]:
        """Behind a router: a worker gone from the sums, back in them, or restarted (its
        counters went down or vanished: its deltas count from 0, the sums do not go down)."""
        changes = []
        for worker in metrics.workers:
            name = worker_name(worker.url)
            if not worker.up and worker.url not in self._workers_down:
                self._workers_down.add(worker.url)
                text = f"{self.name}: {worker_down(worker)}: left out of the summed figures"
                changes.append(Change("error", text))
            elif worker.up and worker.url in self._workers_down:
                self._workers_down.discard(worker.url)
                text = f"{self.name}: worker {name} back: in the summed figures again"
                changes.append(Change("info", text))
            if worker.reset:
                text = f"{self.name}: worker {name} restarted (its counters went down or vanished)"
                changes.append(Change("warn", text))
        return changes

    def _new_process(self, sample: Sample) -> list[str]:
        """A new server process (psutil here, or the agent there) as a restart signal.

        A new process has a new pid and start time. The same pid with a moved start time is the
        host's clock jumping (start times are counted from a boot time that follows the wall
        clock), not a restart.
        """
        telemetry = sample.telemetry
        process = telemetry.server_process if telemetry is not None else None
        if process is None or process.start_time is None:
            return []
        previous, self.process = self.process, (process.pid, process.start_time)
        if (
            previous is None
            or previous[0] == process.pid
            or abs(previous[1] - process.start_time) < 1
        ):
            return []
        return [f"its process (pid {process.pid}) is new"]

    def _new_info(self, info: ServerInfo | None, restarts: list[str]) -> list[Change]:
        """Config changes are events of their own; a relaunch adds to `restarts`."""
        old = self.info
        self.info = info
        if info is None:
            return []
        if old is None:
            spec = info.speculative.describe() if info.speculative else "no speculation"
            return [Change("info", f"{self.name}: {info.title} · {info.model} · {spec}")]
        if old.speculative != info.speculative and not _revealed(old, info):
            before = old.speculative.describe() if old.speculative else "off"
            after = info.speculative.describe() if info.speculative else "off"
            restarts.append(f"speculation changed: {before} → {after}")
        elif old.args != info.args:
            keys = differing_keys(old.args, info.args)
            restarts.append(f"flags changed: {', '.join(keys)}" if keys else "a new launch")
        return []

    @property
    def info_current(self) -> bool:
        """Whether `info` was read in the current lifetime: a restart seen by its counters or
        its process comes a tick or so before the new launch's info."""
        if self._info_at is None:
            return False
        return self.first_seen is None or self._info_at >= self.first_seen

    @property
    def started_at(self) -> float | None:
        """The server process's start (unix seconds) when known: psutil or the agent, else
        /metrics (vLLM's `process_start_time_seconds`)."""
        if self.process is not None:
            return self.process[1]
        latest = self.window.latest
        return latest.process_start_time if latest is not None else None


def _revealed(old: ServerInfo, new: ServerInfo) -> bool:
    """Whether a change of speculation is the same launch showing more of it: on a server whose
    speculation shows only once a request has finished (`BackendFacts.shows_speculation_late`),
    with the same args, off becoming on, or its draft length appearing or growing (a relaunch
    resets its counters, which is a restart of its own)."""
    before, after = old.speculative, new.speculative
    kind = find(new.backend)  # a replay's backend may not be installed here
    late = kind is not None and kind.shows_speculation_late
    if not late or old.args != new.args or after is None:
        return False
    if before is None:
        return True
    grown = before.num_steps is None or (
        after.num_steps is not None and after.num_steps > before.num_steps
    )
    return before.algorithm == after.algorithm and grown
