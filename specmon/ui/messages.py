"""Messages from workers to the app: small dataclasses; per-tick ones replace each other."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from specmon.model import ProbeResult, RunFigures, Sample, Snapshot


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

    wall: float
    t: float
    figures: RunFigures
    result: ProbeResult


@dataclass
class ProbeFailed(Message):
    """A live probe failed; `error` is the one-line reason."""

    wall: float
    error: str


@dataclass
class BenchProgress(Message):
    """A baseline or snapshot bench finished run `done` of `total`."""

    done: int
    total: int
    eta_s: float | None


@dataclass
class BenchDone(Message):
    """A bench completed and was saved (`snapshot.id` is set)."""

    snapshot: Snapshot
    kind: str
    """"baseline" or "snapshot"."""
    origin: str


@dataclass
class BenchFailed(Message):
    """A bench failed or was cancelled: nothing was saved."""

    kind: str
    error: str
