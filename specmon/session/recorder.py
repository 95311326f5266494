"""Recording a feed: every call it makes to the dashboard is written, then passed on.

The seam is the `FeedSink`: what the dashboard receives from its feed (samples, probes,
telemetry, benches) is exactly what a replay feeds it again (`specmon.session.replay`). Its one
other input, what it finds in the snapshot store, is recorded where it asks (`recorded_lookups`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from specmon.errors import SpecmonError
from specmon.measure.snapshot import SnapshotKind
from specmon.model import Protocol, Sample, ServerInfo, Snapshot
from specmon.session.baselines import BaselineLookup, BaselineOrigin
from specmon.session.feed import Feed, FeedSink
from specmon.session.recording import RecordingWriter
from specmon.session.store_baseline import Lookup
from specmon.session.view import BenchView
from specmon.session.watch import ProbeOutcome


class RecordingSink:
    """A `FeedSink` that writes each call to a recording, then makes it on `inner`."""

    def __init__(
        self,
        writer: RecordingWriter,
        inner: FeedSink | None = None,
        *,
        wall: Callable[[], float] = time.time,
        stopped: Callable[[str], None] | None = None,
    ) -> None:
        """Args:
        writer: The recording.
        inner: The dashboard's sink; None records only (`specmon record`).
        wall: The clock of each entry's time.
        stopped: Told once why, when the writer stops writing.
        """
        self.writer = writer
        self.inner = inner
        self.wall = wall
        self.stopped = stopped

    def _record(self, kind: str, *args: Any) -> None:
        if self.writer.stopped is not None:
            return
        self.writer.write(self.wall(), kind, *args)
        if self.writer.stopped is not None and self.stopped is not None:
            self.stopped(self.writer.stopped)

    def sample(self, sample: Sample) -> None:
        """A tick of the monitored server's sampler."""
        self._record("sample", sample)
        if self.inner is not None:
            self.inner.sample(sample)

    def baseline_sample(self, sample: Sample) -> None:
        """A tick of the baseline server's sampler."""
        self._record("baseline_sample", sample)
        if self.inner is not None:
            self.inner.baseline_sample(sample)

    def probe_done(self, outcome: ProbeOutcome) -> None:
        """A live probe finished."""
        self._record("probe_done", outcome)
        if self.inner is not None:
            self.inner.probe_done(outcome)

    def probe_failed(self, wall: float, error: str) -> None:
        """A live probe failed."""
        self._record("probe_failed", wall, error)
        if self.inner is not None:
            self.inner.probe_failed(wall, error)

    def telemetry_failed(self, wall: float, error: str) -> None:
        """Telemetry could not be set up."""
        self._record("telemetry_failed", wall, error)
        if self.inner is not None:
            self.inner.telemetry_failed(wall, error)

    def probe_paused(self, paused: bool) -> None:
        """Someone sharing the feed paused or resumed the probe."""
        self._record("probe_paused", paused)
        if self.inner is not None:
            self.inner.probe_paused(paused)

    def bench_progress(self, progress: BenchView) -> None:
        """A bench started or finished one more run."""
        self._record("bench_progress", progress)
        if self.inner is not None:
            self.inner.bench_progress(progress)

    def bench_done(
        self, snapshot: Snapshot, kind: SnapshotKind, origin: BaselineOrigin | None
    ) -> None:
        """A bench completed and was saved."""
        self._record("bench_done", snapshot, kind, origin)
        if self.inner is not None:
            self.inner.bench_done(snapshot, kind, origin)

    def bench_failed(self, kind: SnapshotKind, error: str) -> None:
        """A bench failed or was cancelled."""
        self._record("bench_failed", kind, error)
        if self.inner is not None:
            self.inner.bench_failed(kind, error)

    def bench_note(self, wall: float, note: str) -> None:
        """A running bench said a line."""
        self._record("bench_note", wall, note)
        if self.inner is not None:
            self.inner.bench_note(wall, note)


class RecordingFeed:
    """A `Feed` whose every report to the dashboard is recorded too (`--record FILE`)."""

    def __init__(
        self, feed: Feed, writer: RecordingWriter, stopped: Callable[[str], None] | None = None
    ) -> None:
        """Args:
        feed: The dashboard's feed (`LocalFeed`).
        writer: The recording; closed when the feed stops.
        stopped: Told once why, when the recording stops before the feed does (the size cap,
            a failed write).
        """
        self.feed = feed
        self.writer = writer
        self.stopped = stopped

    async def run(self, sink: FeedSink) -> None:
        """Run the feed, recording what it reports to `sink`; close the file when it stops."""
        try:
            await self.feed.run(RecordingSink(self.writer, sink, stopped=self.stopped))
        finally:
            self.writer.close()

    def follow_baseline_server(self, url: str | None) -> None:
        """As the feed's."""
        self.feed.follow_baseline_server(url)

    def start_bench(
        self, kind: SnapshotKind, url: str, origin: BaselineOrigin | None, label: str | None
    ) -> None:
        """As the feed's."""
        self.feed.start_bench(kind, url, origin, label)

    def cancel_bench(self) -> bool:
        """As the feed's."""
        return self.feed.cancel_bench()

    def pause_probe(self, paused: bool) -> None:
        """As the feed's."""
        self.feed.pause_probe(paused)


def recorded_lookups(
    writer: RecordingWriter, lookup: Lookup, *, wall: Callable[[], float] = time.time
) -> Lookup:
    """`lookup`, with each answer (or failure) recorded: what the dashboard found in the store is
    an input too, and a replay answers the same (`ReplayFeed.lookup`)."""

    def recorded(info: ServerInfo, protocol: Protocol) -> BaselineLookup:
        try:
            found = lookup(info, protocol)
        except SpecmonError as exc:
            writer.write(wall(), "store_lookup", None, str(exc))
            raise
        writer.write(wall(), "store_lookup", found, None)
        return found

    return recorded
