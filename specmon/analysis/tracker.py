"""One server's lifetime as seen through its samples: restarts, config changes, outages."""

from __future__ import annotations

from specmon.analysis.validity import differing_keys
from specmon.analysis.view import Level
from specmon.analysis.window import MetricsWindow
from specmon.model import Sample, ServerInfo, Telemetry


class ServerTracker:
    """Follows one server's lifetime across samples: restarts, config changes, outages."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.window = MetricsWindow()
        self.info: ServerInfo | None = None
        self.first_seen: float | None = None
        self.down_since: float | None = None
        self.process: tuple[int, float] | None = None
        """The server process's (pid, start time) as last seen."""
        self._seqs: dict[str, int] = {}
        self._errors: dict[str, str | None] = {}

    def update(self, sample: Sample) -> list[tuple[Level, str, bool]]:
        """Take a sample; returns (level, text, is_restart) for what changed."""
        changes: list[tuple[Level, str, bool]] = []
        for source, reading in sample.readings.items():
            previous_error = self._errors.get(source)
            if reading.error and reading.error != previous_error:
                changes.append(("error", f"{self.name} {source}: {reading.error}", False))
                self._errors[source] = reading.error
            elif previous_error and reading.error is None:
                changes.append(("info", f"{self.name} {source}: recovered", False))
                self._errors[source] = None
        failing = all(self._errors.get(s) for s in ("info", "metrics") if s in sample.readings)
        if failing and self.down_since is None and self._seqs:
            self.down_since = sample.t
        info_reading = sample.readings.get("info")
        if info_reading is not None and info_reading.seq != self._seqs.get("info"):
            self._seqs["info"] = info_reading.seq
            changes.extend(self._new_info(sample.info, sample.t))
        metrics_reading = sample.readings.get("metrics")
        if (
            metrics_reading is not None
            and metrics_reading.seq != self._seqs.get("metrics")
            and sample.metrics is not None
            and metrics_reading.at is not None
        ):
            self._seqs["metrics"] = metrics_reading.seq
            if self.window.add(metrics_reading.at, sample.metrics):
                changes.append(("warn", f"{self.name} restarted: its counters went down", True))
                self.first_seen = sample.t
        changes.extend(self._new_process(sample))
        if self.first_seen is None and self._seqs:
            self.first_seen = sample.t
        return changes

    def _new_process(self, sample: Sample) -> list[tuple[Level, str, bool]]:
        """A new server process (psutil here, or the agent there) as a restart signal.

        A new process has a new pid and start time. The same pid with a moved start time is the
        host's clock jumping (start times are counted from a boot time that follows the wall
        clock), not a restart.
        """
        telemetry = sample.value("gpu")
        process = telemetry.server_process if isinstance(telemetry, Telemetry) else None
        if process is None or process.start_time is None:
            return []
        previous, self.process = self.process, (process.pid, process.start_time)
        if (
            previous is None
            or previous[0] == process.pid
            or abs(previous[1] - process.start_time) < 1
        ):
            return []
        self.first_seen = sample.t
        return [("warn", f"{self.name} restarted: its process (pid {process.pid}) is new", True)]

    def _new_info(self, info: ServerInfo | None, t: float) -> list[tuple[Level, str, bool]]:
        changes: list[tuple[Level, str, bool]] = []
        old = self.info
        self.info = info
        if info is None:
            return changes
        if self.down_since is not None:
            self.down_since = None
            changes.append(
                ("warn", f"{self.name} is back after an outage: treated as a restart", True)
            )
            self.first_seen = t
        if old is None:
            spec = info.speculative.describe() if info.speculative else "no speculation"
            changes.append(("info", f"{self.name}: {info.title} · {info.model} · {spec}", False))
            return changes
        if old.speculative != info.speculative:
            before = old.speculative.describe() if old.speculative else "off"
            after = info.speculative.describe() if info.speculative else "off"
            changes.append(("warn", f"{self.name} speculation changed: {before} → {after}", True))
            self.first_seen = t
        elif old.args != info.args:
            keys = differing_keys(old.args, info.args)
            what = f"flags changed: {', '.join(keys)}" if keys else "restarted (new launch)"
            changes.append(("warn", f"{self.name} {what}", True))
            self.first_seen = t
        return changes
