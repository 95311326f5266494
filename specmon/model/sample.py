"""The sampler's tick: each source's latest reading, one immutable Sample."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from specmon.model.gpu import Telemetry
from specmon.model.metrics import ServerMetrics
from specmon.model.server import ServerInfo


class SourceName(StrEnum):
    """The sampler's sources: the keys of `Sample.readings`."""

    INFO = "info"
    METRICS = "metrics"
    GPU = "gpu"


@dataclass(frozen=True, slots=True)
class Reading:
    """The latest state of one source."""

    value: Any
    """The last successful result (None until the first)."""
    at: float | None
    """Monotonic time the value was read."""
    seq: int
    """How many successful reads so far: a new value is one whose seq changed."""
    error: str | None = None
    """The last failure since the last success, if any."""
    error_at: float | None = None


@dataclass(frozen=True, slots=True)
class Sample:
    """Everything known at one tick."""

    t: float
    """Monotonic time of the tick."""
    wall: float
    readings: Mapping[str, Reading]

    def value(self, name: str) -> Any:
        """The latest value of a source, or None."""
        reading = self.readings.get(name)
        return None if reading is None else reading.value

    @property
    def info(self) -> ServerInfo | None:
        """The latest server info."""
        value = self.value(SourceName.INFO)
        return value if isinstance(value, ServerInfo) else None

    @property
    def metrics(self) -> ServerMetrics | None:
        """The latest /metrics scrape."""
        value = self.value(SourceName.METRICS)
        return value if isinstance(value, ServerMetrics) else None

    @property
    def telemetry(self) -> Telemetry | None:
        """The latest GPU/host reading."""
        value = self.value(SourceName.GPU)
        return value if isinstance(value, Telemetry) else None

    def error(self, name: str) -> str | None:
        """A source's last error since its last success, or None."""
        reading = self.readings.get(name)
        return None if reading is None else reading.error

    def age(self, name: str) -> float | None:
        """Seconds since the source last succeeded (None if it never did)."""
        reading = self.readings.get(name)
        return None if reading is None or reading.at is None else self.t - reading.at
