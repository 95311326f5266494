"""The recording file: every input the dashboard received, with its time (`specmon record`,
`--record FILE`; `specmon replay FILE` reads it).

JSON Lines, written as it goes and flushed line by line, so a crash loses at most the line being
written (a truncated last line is read as the end). The first line is the header; each later one
is one call the feed made to the dashboard (`FeedSink`), or the store's answer to a baseline
lookup the dashboard made (`store_lookup`): its kind, its wall time `at`, and its
arguments (`specmon.storage.serialize_live`). A reading whose value equals the one written
before it is written as `"same": true` instead: server info is most of a sample, and rarely
changes. Nothing holds the API key: server args are masked by the sources that read them
(`sources.secrets`), and the key itself is never an input. The file is created 0600, and stops
growing at a size cap (the file then ends with an `end` line saying so).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from specmon import __version__
from specmon.config import MonitorConfig
from specmon.errors import SpecmonError
from specmon.measure.snapshot import SnapshotKind
from specmon.model import Reading, Sample, Snapshot
from specmon.nesting import loads_json
from specmon.session.baselines import BaselineLookup, BaselineOrigin
from specmon.session.view import BenchView
from specmon.session.watch import ProbeOutcome
from specmon.storage.private_files import close_quietly, open_private
from specmon.storage.serialize import RecordError
from specmon.storage.serialize_live import from_data, to_data

FORMAT = "specmon-recording"
VERSION = 1
"""Version of the file format; bump it on any change old readers would misread."""
DEFAULT_MAX_BYTES = 500 * 1024 * 1024
"""The size cap: about a day of one server sampled every second (~20 MB an hour: a sample's
/metrics ~2 kB, and its server info, 15-20 kB, each time it is read anew and changed)."""
SAMPLE_KINDS = ("sample", "baseline_sample")


class RecordingError(SpecmonError):
    """A recording that cannot be written or read; `str()` is one line naming the file."""


@dataclass(frozen=True, slots=True)
class Header:
    """What the file's first line says about the session recorded."""

    target: str
    """The watched server's URL."""
    started_at: float
    """Wall time (unix seconds) the recording began."""
    interval: float
    """The sampling interval of the session, seconds."""
    specmon: str = __version__
    """The version of specmon that wrote it."""
    baseline_url: str | None = None
    probe: bool = True
    probe_every: float = 10.0
    probe_tokens: int = 256
    """The probe's size: which stored baselines match it."""
    max_age: float = 1800.0

    @classmethod
    def of(cls, config: MonitorConfig, started_at: float) -> Header:
        """The header of a session of `config` starting at `started_at` (wall)."""
        return cls(
            config.url,
            started_at,
            config.interval,
            baseline_url=config.baseline_url,
            probe=config.probe,
            probe_every=config.probe_every,
            probe_tokens=config.probe_tokens,
            max_age=config.max_age,
        )

    def config(self, base: MonitorConfig) -> MonitorConfig:
        """`base` (the replaying user's theme, dumps folder …) with the recorded session's
        target and the settings that shape what the dashboard showed."""
        return replace(
            base,
            url=self.target,
            interval=self.interval,
            baseline_url=self.baseline_url,
            probe=self.probe,
            probe_every=self.probe_every,
            probe_tokens=self.probe_tokens,
            max_age=self.max_age,
            fleet=(),
        )


@dataclass(frozen=True, slots=True)
class Entry:
    """One input: what the feed called (`kind`, a `FeedSink` method's name) and with what."""

    at: float
    """Wall time it was received (unix seconds)."""
    kind: str
    args: tuple[Any, ...]


class RecordingWriter:
    """Appends entries to a new recording, line by line, up to a size cap."""

    def __init__(
        self,
        path: Path,
        header: Header,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        replace: bool = False,
    ) -> None:
        """Create `path` (0600, never through a link) and write the header.

        Args:
            path: The recording.
            header: Its first line.
            max_bytes: The size cap.
            replace: Replace a file already there (`--force`); otherwise it is refused: a
                recording may be an incident's only evidence.

        Raises:
            RecordingError: The file exists (unless `replace`), or cannot be created, or its
                header cannot be written (a full disk).
        """
        self.path = path
        self.max_bytes = max_bytes
        self.stopped: str | None = None
        """Why nothing more is written (the size cap, a failed write); None while recording."""
        self.full = False
        """Stopped at the size cap (not by a failed write)."""
        self.written = 0
        self._last: dict[tuple[str, str], Any] = {}
        """The value of each sampler's source last written (by kind of sample)."""
        try:
            self._file: IO[str] = open_private(path, "w" if replace else "x", encoding="utf-8")
        except FileExistsError:
            raise RecordingError(
                f"cannot record to {path}: it exists (pass --force to replace it)"
            ) from None
        except OSError as exc:
            raise RecordingError(f"cannot record to {path}: {exc.strerror or exc}") from None
        self._line({"format": FORMAT, "version": VERSION, **to_data(header)})
        if self.stopped is not None:
            raise RecordingError(self.stopped)

    def write(self, at: float, kind: str, *args: Any) -> None:
        """Append one input; past the size cap, write the `end` line and stop."""
        if self.stopped is not None:
            return
        if kind in SAMPLE_KINDS:
            written = [self._sample_data(kind, args[0])]
        else:
            written = [to_data(a) for a in args]
        line = json.dumps({"at": at, "kind": kind, "args": written}, separators=(",", ":")) + "\n"
        if self.written + len(line) > self.max_bytes:
            self.full = True
            self.stopped = f"the size cap ({self.max_bytes // (1024 * 1024)} MB) was reached"
            self._line({"at": at, "kind": "end", "args": [self.stopped]})
            self.close()
            return
        self._write(line)

    def _sample_data(self, kind: str, sample: Sample) -> dict[str, Any]:
        """The sample as data, each reading whose value equals the one written before it (by
        value, not `seq`: server info is read anew every few seconds, most often unchanged, and
        a new sampler counts from 0 again) as `"same": true`, left unconverted."""
        readings = {}
        for name, reading in sample.readings.items():
            before = self._last.get((kind, name))
            self._last[(kind, name)] = reading.value
            if reading.value is not None and (before is reading.value or before == reading.value):
                readings[name] = {**to_data(replace(reading, value=None)), "same": True}
            else:
                readings[name] = to_data(reading)
        return {"t": sample.t, "wall": sample.wall, "readings": readings}

    def _line(self, data: Mapping[str, Any]) -> None:
        self._write(json.dumps(data, separators=(",", ":")) + "\n")

    def _write(self, line: str) -> None:
        try:
            self._file.write(line)
            self._file.flush()  # a crash loses at most this line
        except (OSError, ValueError) as exc:  # ValueError: closed meanwhile
            self.stopped = f"writing {self.path} failed: {getattr(exc, 'strerror', None) or exc}"
            self.close()  # the file is whole up to the line before: a replay ends there
            return
        self.written += len(line)

    def close(self) -> None:
        """Close the file (idempotent; a flush that fails again, the disk full, is let go: the
        error that stopped the recording is the one reported)."""
        if not self._file.closed:
            close_quietly(self._file)


@dataclass(frozen=True, slots=True)
class Recording:
    """A recording read back: its header and every input, in order."""

    header: Header
    entries: tuple[Entry, ...]
    ended: str | None
    """Why the recording stopped early (its `end` line), or None."""
    truncated: bool
    """The last line was cut short (the recorder was killed mid-write): left out."""
    cut_at: int | None = None
    """With `truncated`: the byte at which the cut line starts."""

    @property
    def cut_note(self) -> str | None:
        """ "the recording ends mid-line at byte N: the last record is cut", or None."""
        if not self.truncated:
            return None
        at = f" at byte {self.cut_at}" if self.cut_at is not None else ""
        return f"the recording ends mid-line{at}: the last record is cut"

    @property
    def duration(self) -> float:
        """Seconds from the start to the last input."""
        return self.entries[-1].at - self.header.started_at if self.entries else 0.0


def read_recording(path: Path) -> Recording:
    """Read a whole recording.

    Raises:
        RecordingError: No such file, not a recording, one from a newer specmon, or a line that
            cannot be read (one line naming the file and line).
    """
    try:
        with path.open(encoding="utf-8") as file:
            return _read(path, file)
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RecordingError(f"{path} is not a specmon recording (not text)") from None


def _read(path: Path, file: IO[str]) -> Recording:
    lines = _lines(file)
    first = next(lines, None)
    head = _json(first[1]) if first else None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise RecordingError(f"{path} is not a specmon recording")
    version = head.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise RecordingError(
            f"{path} was recorded by a newer specmon ({head.get('specmon')}, "
            f"format {version}): this one reads format {VERSION}; upgrade "
            "specmon to replay it"
        )
    try:
        fields = {k: v for k, v in head.items() if k not in ("format", "version")}
        header = _checked(from_data(Header, fields, "header"))
    except RecordError as exc:
        raise RecordingError(f"{path}: line 1: {exc}") from None
    entries: list[Entry] = []
    last: dict[tuple[str, str], Reading] = {}
    ended, truncated, cut_at = None, False, None
    for number, line, complete, offset in lines:
        data = _json(line)
        if data is None and not complete:
            truncated, cut_at = True, offset
            break
        try:
            entry = _entry(data, last)
        except RecordError as exc:
            raise RecordingError(f"{path}: line {number}: {exc}") from None
        if entry.kind == "end":
            ended = str(entry.args[0]) if entry.args else "ended"
            break
        entries.append(entry)
    return Recording(header, tuple(entries), ended, truncated, cut_at)


MAX_TIME = 1e11
"""The largest time (wall or monotonic seconds) a recording may hold: the year 5138. A time
read past it (or NaN, which JSON's `NaN` reads back as) is refused, line and field named."""
MAX_SPAN_S = 1e9
"""The largest setting in seconds a header may hold (~32 years): the schedule of a replay
adds and multiplies these, and `asyncio` sleeps on them."""


def _checked(header: Header) -> Header:
    """`header`, when its times are numbers a replay can run on (a crafted or corrupt file may
    hold NaN, infinities or 1e308: JSON's `NaN` is read back as Python writes it).

    Raises:
        RecordError: A time that is not finite, or a span not within (0, `MAX_SPAN_S`].
    """
    if not -MAX_TIME <= header.started_at <= MAX_TIME:  # NaN fails too
        raise RecordError(f"header.started_at: not a time ({header.started_at!r})")
    for name in ("interval", "probe_every", "max_age"):
        value = getattr(header, name)
        if not 0 < value <= MAX_SPAN_S:
            raise RecordError(f"header.{name}: not a span of seconds ({value!r})")
    if header.probe_tokens <= 0:
        raise RecordError(f"header.probe_tokens: not a count of tokens ({header.probe_tokens})")
    return header


def _lines(file: IO[str]) -> Iterator[tuple[int, str, bool, int]]:
    """(line number, text, whether it ended with a newline, the byte it starts at); the header
    is line 1."""
    offset = 0
    for number, line in enumerate(file, start=1):
        if line.strip():
            yield number, line, line.endswith("\n"), offset
        offset += len(line.encode("utf-8"))


def _json(line: str) -> Any:
    """A line's JSON, or None when it is not JSON (nested too deep included: `loads_json`)."""
    try:
        return loads_json(line)
    except ValueError:
        return None


ARG_TYPES: dict[str, tuple[type[Any], ...]] = {
    "sample": (Sample,),
    "baseline_sample": (Sample,),
    "probe_done": (ProbeOutcome,),
    "probe_failed": (float, str),
    "telemetry_failed": (float, str),
    "probe_paused": (bool,),
    "bench_progress": (BenchView,),
    "bench_done": (Snapshot, SnapshotKind, BaselineOrigin | None),  # type: ignore[dict-item]
    "bench_failed": (SnapshotKind, str),
    "bench_note": (float, str),
    "store_lookup": (BaselineLookup | None, str | None),  # type: ignore[dict-item]
    "end": (str,),
}
"""Each kind of entry (a `FeedSink` method; what the store answered, or the error it gave; the
`end` line) and its arguments' types."""


def _entry(data: Any, last: dict[tuple[str, str], Reading]) -> Entry:
    if not isinstance(data, dict):
        raise RecordError("not a JSON object")
    at, kind, args = data.get("at"), data.get("kind"), data.get("args")
    if not isinstance(at, int | float) or isinstance(at, bool) or not -MAX_TIME <= at <= MAX_TIME:
        raise RecordError(f"at: expected a time, got {at!r}")
    types = ARG_TYPES.get(kind) if isinstance(kind, str) else None
    if types is None or not isinstance(kind, str):
        raise RecordError(f"unknown kind of input {kind!r}")
    if not isinstance(args, list) or len(args) != len(types):
        raise RecordError(f"{kind}: expected {len(types)} arguments")
    if kind in SAMPLE_KINDS:
        return Entry(float(at), kind, (_sample(kind, args[0], last),))
    pairs = zip(types, args, strict=True)
    return Entry(float(at), kind, tuple(from_data(t, a, kind) for t, a in pairs))


def _sample(kind: str, data: Any, last: dict[tuple[str, str], Reading]) -> Sample:
    """A sample whose unchanged readings (`"same"`) take the value of the previous one."""
    same: list[str] = []
    if isinstance(data, dict) and isinstance(data.get("readings"), dict):
        readings = {}
        for name, reading in data["readings"].items():
            if isinstance(reading, dict) and reading.get("same") is True:
                same.append(name)
                reading = {k: v for k, v in reading.items() if k != "same"}
            readings[name] = reading
        data = {**data, "readings": readings}
    sample = from_data(Sample, data, kind)
    for name in ("t", "wall"):
        if not -MAX_TIME <= getattr(sample, name) <= MAX_TIME:  # NaN fails too
            raise RecordError(f"{kind}.{name}: not a time ({getattr(sample, name)!r})")
    readings = dict(sample.readings)
    for name in same:
        before = last.get((kind, name))
        if before is None:
            raise RecordError(f"{kind}.readings.{name}: unchanged from a reading never written")
        readings[name] = replace(readings[name], value=before.value)
    for name, reading in readings.items():
        last[(kind, name)] = reading
    return replace(sample, readings=readings)
