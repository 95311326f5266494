"""Messages from workers to the app: small dataclasses; per-tick ones replace each other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.message import Message

from specmon.measure.snapshot import SnapshotKind
from specmon.model import Sample, Snapshot
from specmon.session.baselines import BaselineOrigin
from specmon.session.fleet_row import FleetRow
from specmon.session.history_zoom import Zoomed
from specmon.session.view import BenchView, Level
from specmon.session.watch import ProbeOutcome


@dataclass
class SampleReady(Message):
    """A tick of the monitored server's sampler."""

    sample: Sample

    def can_replace(self, message: Message) -> bool:
        """A newer tick makes an undelivered older one pointless."""
        return isinstance(message, SampleReady)


@dataclass
class BaselineSampleReady(Message):
    """A tick of the baseline server's sampler."""

    sample: Sample

    def can_replace(self, message: Message) -> bool:
        """A newer tick makes an undelivered older one pointless."""
        return isinstance(message, BaselineSampleReady)


@dataclass
class ProbeDone(Message):
    """A live probe finished."""

    outcome: ProbeOutcome


@dataclass
class ProbeFailed(Message):
    """A live probe failed; `error` is the one-line reason."""

    wall: float
    error: str


@dataclass
class BenchProgress(Message):
    """A baseline or snapshot bench finished one more run."""

    progress: BenchView


@dataclass
class BenchDone(Message):
    """A bench completed and was saved (`snapshot.id` is set)."""

    snapshot: Snapshot
    kind: SnapshotKind
    origin: BaselineOrigin | None
    """Where a baseline came from (None for a labelled snapshot)."""


@dataclass
class BenchFailed(Message):
    """A bench failed or was cancelled: nothing was saved."""

    kind: SnapshotKind
    error: str


@dataclass
class BenchNote(Message):
    """A running bench said a line."""

    wall: float
    note: str


@dataclass
class HistoryNote(Message):
    """The history writer's thread said a line: a store error, or a drift finding."""

    wall: float
    level: Level
    text: str


@dataclass
class RecordingStopped(Message):
    """The dashboard's recording (`--record`) stopped: at its size cap, or a write failed."""

    wall: float
    why: str


@dataclass
class ZoomRead(Message):
    """A span of the history was read for the sparklines (`z`)."""

    zoomed: Zoomed


@dataclass
class FleetRowsReady(Message):
    """Every server's row of the fleet table, worst first."""

    rows: tuple[FleetRow, ...]

    def can_replace(self, message: Message) -> bool:
        """Newer rows make undelivered older ones pointless."""
        return isinstance(message, FleetRowsReady)


@dataclass
class ProbePaused(Message):
    """Another tab sharing the feed paused or resumed the probe (`specmon web`)."""

    paused: bool


class PostingSink:
    """A `FeedSink` that posts what the feed reports as the messages above."""

    def __init__(self, post: Callable[[Message], object]) -> None:
        """Args:
        post: The app's `post_message`.
        """
        self.post = post

    def sample(self, sample: Sample) -> None:
        """A tick of the monitored server."""
        self.post(SampleReady(sample))

    def baseline_sample(self, sample: Sample) -> None:
        """A tick of the baseline server."""
        self.post(BaselineSampleReady(sample))

    def probe_done(self, outcome: ProbeOutcome) -> None:
        """A live probe finished."""
        self.post(ProbeDone(outcome))

    def probe_failed(self, wall: float, error: str) -> None:
        """A live probe failed."""
        self.post(ProbeFailed(wall, error))

    def probe_paused(self, paused: bool) -> None:
        """Another tab paused or resumed the probe."""
        self.post(ProbePaused(paused))

    def bench_progress(self, progress: BenchView) -> None:
        """A bench started or finished one more run."""
        self.post(BenchProgress(progress))

    def bench_done(
        self, snapshot: Snapshot, kind: SnapshotKind, origin: BaselineOrigin | None
    ) -> None:
        """A bench completed and was saved."""
        self.post(BenchDone(snapshot, kind, origin))

    def bench_failed(self, kind: SnapshotKind, error: str) -> None:
        """A bench failed or was cancelled."""
        self.post(BenchFailed(kind, error))

    def bench_note(self, wall: float, note: str) -> None:
        """A running bench said a line."""
        self.post(BenchNote(wall, note))
