"""Recordings: what the dashboard receives, written as it comes and read back equal; bad files
refused in one line."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from specmon.config import MonitorConfig, Targets
from specmon.measure.snapshot import SnapshotKind
from specmon.model import HostStats, ProcessStats, Reading, Sample, Snapshot, Telemetry
from specmon.session.baselines import BaselineOrigin
from specmon.session.feed import LocalFeed
from specmon.session.recorder import RecordingSink
from specmon.session.recording import (
    VERSION,
    Header,
    RecordingError,
    RecordingWriter,
    read_recording,
)
from specmon.session.view import BenchView
from specmon.session.watch import ProbeOutcome
from specmon.sim import SimConfig, SimThread
from specmon.storage.serialize import RecordError
from specmon.storage.serialize_live import from_data, to_data
from specmon.target import ApiKey, Target

SECRET = "sk-recording-SECRET-4242"
FAST = SimConfig(
    plain_step_ms=4.0, cycle_ms=8.0, accept_length=2.1, ttft_ms=10.0, seed=3, api_key=SECRET
)


class Collecting:
    """A sink that keeps every call, as (kind, args), and says when enough came."""

    def __init__(self, samples: int, probes: int) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.want = (samples, probes)
        self.enough = asyncio.Event()

    def _got(self, kind: str, *args: Any) -> None:
        self.calls.append((kind, args))
        samples = sum(1 for k, _ in self.calls if k == "sample")
        probes = sum(1 for k, _ in self.calls if k == "probe_done")
        if samples >= self.want[0] and probes >= self.want[1]:
            self.enough.set()

    def sample(self, sample: Sample) -> None:
        self._got("sample", sample)

    def baseline_sample(self, sample: Sample) -> None:
        self._got("baseline_sample", sample)

    def probe_done(self, outcome: ProbeOutcome) -> None:
        self._got("probe_done", outcome)

    def probe_failed(self, wall: float, error: str) -> None:
        self._got("probe_failed", wall, error)

    def telemetry_failed(self, wall: float, error: str) -> None:
        self._got("telemetry_failed", wall, error)

    def probe_paused(self, paused: bool) -> None:
        self._got("probe_paused", paused)

    def bench_progress(self, progress: BenchView) -> None:
        self._got("bench_progress", progress)

    def bench_done(
        self, snapshot: Snapshot, kind: SnapshotKind, origin: BaselineOrigin | None
    ) -> None:
        self._got("bench_done", snapshot, kind, origin)

    def bench_failed(self, kind: SnapshotKind, error: str) -> None:
        self._got("bench_failed", kind, error)

    def bench_note(self, wall: float, note: str) -> None:
        self._got("bench_note", wall, note)


async def record_simulator(path: Path, *, samples: int = 8, probes: int = 2) -> Collecting:
    """Record a dashboard's feed against the simulator (with an API key) until it has sent
    `samples` samples and `probes` probes; returns what the dashboard received."""
    with SimThread(FAST) as sim:
        config = MonitorConfig(url=sim.url, interval=0.2, probe_every=1.0, probe_tokens=40)
        feed = LocalFeed(config, Targets(Target(sim.url, ApiKey(SECRET, "test"))), None)
        writer = RecordingWriter(path, Header(sim.url, 1.0e9, config.interval))
        seen = Collecting(samples, probes)
        task = asyncio.create_task(feed.run(RecordingSink(writer, seen)))
        try:
            await asyncio.wait_for(seen.enough.wait(), 60)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            writer.close()
    return seen


@pytest.mark.slow
async def test_a_session_against_the_simulator_reads_back_as_received(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    seen = await record_simulator(path)
    recording = read_recording(path)
    assert [(e.kind, e.args) for e in recording.entries] == seen.calls
    assert recording.header.target.startswith("http://127.0.0.1:")
    assert recording.ended is None and not recording.truncated
    info = recording.entries[-1].args[0].info
    assert info is not None and info.speculative is not None  # the server, read back whole


@pytest.mark.slow
async def test_a_recording_holds_no_api_key_and_only_its_owner_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    seen = await record_simulator(path, samples=3, probes=1)
    text = path.read_text()
    # The simulator echoes its --api-key in its server args, as SGLang does: masked.
    info = next(args[0].info for kind, args in seen.calls if kind == "sample" and args[0].info)
    assert info.args.get("api_key") == "***"
    assert SECRET not in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.slow
async def test_unchanged_readings_are_written_once(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    await record_simulator(path, samples=10, probes=0)
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    infos = [s["args"][0]["readings"]["info"] for s in lines if s["kind"] == "sample"]
    written = [i for i in infos if i.get("value") is not None]
    assert len(written) < len(infos) and any(i.get("same") for i in infos)


def _written(tmp_path: Path, *, max_bytes: int = 10**9) -> tuple[Path, RecordingWriter]:
    path = tmp_path / "r.jsonl"
    return path, RecordingWriter(path, Header("http://h:1", 100.0, 1.0), max_bytes=max_bytes)


def test_the_size_cap_ends_the_file_saying_so(tmp_path: Path) -> None:
    path, writer = _written(tmp_path, max_bytes=600)
    for i in range(20):
        writer.write(100.0 + i, "bench_note", 100.0 + i, "a note of some length " * 2)
    assert writer.full and writer.stopped == "the size cap (0 MB) was reached"
    recording = read_recording(path)
    assert recording.ended == writer.stopped
    assert 0 < len(recording.entries) < 20
    assert path.stat().st_size < 800


def test_a_truncated_last_line_is_the_end(tmp_path: Path) -> None:
    path, writer = _written(tmp_path)
    writer.write(101.0, "bench_note", 101.0, "one")
    writer.write(102.0, "bench_note", 102.0, "two")
    writer.close()
    text = path.read_text()
    path.write_text(text[:-9])  # killed mid-write
    recording = read_recording(path)
    assert recording.truncated
    assert [e.args[1] for e in recording.entries] == ["one"]
    # It played to its end without a word: the cut is said, with the byte its line starts at.
    start = len(text.rstrip("\n").rsplit("\n", 1)[0].encode()) + 1
    assert recording.cut_at == start
    assert recording.cut_note == (
        f"the recording ends mid-line at byte {start}: the last record is cut"
    )


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("", "is not a specmon recording"),
        ("hello\n", "is not a specmon recording"),
        ('{"format": "other"}\n', "is not a specmon recording"),
        (
            f'{{"format": "specmon-recording", "version": {VERSION + 1}, "specmon": "9.0"}}\n',
            f"was recorded by a newer specmon (9.0, format {VERSION + 1}): this one reads format "
            f"{VERSION}; upgrade specmon to replay it",
        ),
        ('{"format": "specmon-recording", "version": 1}\n', "line 1: header: missing 'target'"),
    ],
    ids=["empty", "text", "other_json", "newer", "bad_header"],
)
def test_a_file_that_is_not_a_recording_is_refused_in_one_line(
    tmp_path: Path, content: str, error: str
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(content)
    with pytest.raises(RecordingError) as raised:
        read_recording(path)
    assert str(raised.value) == f"{path}: {error}" or str(raised.value) == f"{path} {error}"
    assert "\n" not in str(raised.value)


def test_a_bad_line_inside_is_named(tmp_path: Path) -> None:
    path, writer = _written(tmp_path)
    writer.write(101.0, "bench_note", 101.0, "one")
    writer.close()
    with path.open("a") as file:
        file.write('{"at": 102, "kind": "bench_note", "args": [102, 7]}\n')
        file.write('{"at": 103, "kind": "bench_note", "args": [103, "three"]}\n')
    with pytest.raises(RecordingError, match=r"r.jsonl: line 3: bench_note: expected str, got int"):
        read_recording(path)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match=r"cannot read .*nope.jsonl: No such file"):
        read_recording(tmp_path / "nope.jsonl")


def test_a_bad_value_names_its_field() -> None:
    data = to_data(BenchView("baseline", 1, 3, None))
    with pytest.raises(RecordError, match=r"BenchView.kind: 'warmup' is not one of"):
        from_data(BenchView, {**data, "kind": "warmup"})
    with pytest.raises(RecordError, match=r"BenchView.total: expected int, got str"):
        from_data(BenchView, {**data, "total": "3"})
    assert from_data(BenchView, data) == BenchView("baseline", 1, 3, None)


def test_a_field_added_later_takes_its_default_in_older_recordings() -> None:
    process = ProcessStats(42, "sglang", 1.0e9, 12.5, 2**30, port=30000)
    data = to_data(process)
    del data["port"]  # written before ProcessStats had it
    assert from_data(ProcessStats, data) == replace(process, port=None)


def test_a_reading_is_elided_only_when_its_value_is_the_same(tmp_path: Path) -> None:
    """By value, not by `seq`: another sampler (a new baseline server) counts from 0 again."""
    path, writer = _written(tmp_path)
    first = HostStats(10.0, 8, 1, 2)

    def tick(t: float, host: HostStats) -> Sample:
        telemetry = Telemetry("nvml", "NVML on this machine", host=host)
        return Sample(t, 100.0 + t, {"gpu": Reading(telemetry, t, 1)})

    for t, host in ((1.0, first), (2.0, first), (3.0, replace(first, cpu_percent=90.0))):
        writer.write(100.0 + t, "sample", tick(t, host))
    writer.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert [line["args"][0]["readings"]["gpu"].get("same", False) for line in lines] == [
        False,
        True,
        False,
    ]
    hosts = [e.args[0].telemetry.host for e in read_recording(path).entries]
    assert hosts == [first, first, replace(first, cpu_percent=90.0)]


def test_every_container_of_the_model_reads_back() -> None:
    @dataclass(frozen=True)
    class Holder:
        pairs: tuple[tuple[str, float], ...]
        names: frozenset[str]
        values: list[int]
        by_name: Mapping[str, float]
        fixed: tuple[int, str]

    holder = Holder((("a", 1.0),), frozenset({"y", "x"}), [1, 2], {"k": 2.5}, (3, "z"))
    assert from_data(Holder, json.loads(json.dumps(to_data(holder)))) == holder
