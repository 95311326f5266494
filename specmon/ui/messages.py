"""Messages from workers to the app: small dataclasses; per-tick ones replace each other."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from specmon.model import Sample, Snapshot
from specmon.session.baselines import BaselineOrigin
from specmon.session.fleet_row import FleetRow
from specmon.session.snapshot import SnapshotKind
from specmon.session.view import BenchView
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
class FleetRowsReady(Message):
    """Every server's row of the fleet table, worst first."""

    rows: tuple[FleetRow, ...]

    def can_replace(self, message: Message) -> bool:
        """Newer rows make undelivered older ones pointless."""
        return isinstance(message, FleetRowsReady)
