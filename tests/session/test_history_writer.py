"""The dashboard's history: what the recorder takes from samples and probes, and the writer's
thread putting it in the store (batched, its errors said once, drift found)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from factories import sample, server_info, server_metrics

from specmon.analysis.drift import Drift
from specmon.history import Figure, Mark, MarkKind, Point
from specmon.model import RunFigures
from specmon.session.history_writer import HistoryRecorder, HistoryWriter
from specmon.session.tracker import Change
from specmon.storage import history_store
from specmon.storage.history_store import Limits
from specmon.storage.store import Store
from tests.analysis.test_drift import series
from tests.session.test_live import _live
from tests.storage.test_store import make_snapshot

URL = "http://h:1"
T0 = 1_750_000_020.0


class Collected(HistoryWriter):
    """A writer that keeps what it is given (no thread, no store)."""

    def __init__(self) -> None:
        super().__init__(Path("unused"), URL, Limits(), on_error=print, on_drift=print)
        self.points: list[Point] = []
        self.marks: list[Mark] = []

    def add(self, points: Sequence[Point], marks: Sequence[Mark] = ()) -> None:
        self.points.extend(points)
        self.marks.extend(marks)


def test_restarts_and_config_changes_are_marked_other_events_are_not() -> None:
    live, writer = _live(), Collected()
    recorder = HistoryRecorder(live, writer)
    recorder.started(999.0)
    plain = server_info("plain")
    restarted = server_metrics("plain_metrics_after_restart.txt")
    samples = [
        sample(1, info=plain, metrics=server_metrics("plain/metrics_after"), seq=1),
        sample(2, info=plain, metrics=restarted, seq=2),
        sample(3, info=server_info("spec"), metrics=None, seq=3),
    ]
    for tick in samples:
        recorder.on_sample(tick, live.on_sample(tick))
    assert [(m.at, m.kind) for m in writer.marks] == [
        (999.0, MarkKind.WATCH),
        (1002.0, MarkKind.RESTART),
        (1003.0, MarkKind.CONFIG),
    ]
    assert writer.marks[2].text.startswith("server restarted: speculation changed: off →")


def test_probe_figures_are_recorded_and_missing_ones_left_out() -> None:
    live, writer = _live(), Collected()
    tick = sample(1, info=server_info("spec"), metrics=None, seq=1)
    live.on_sample(tick)
    figures = run_figures_of(decode=75.9, accept=None, cycle=29.9)
    HistoryRecorder(live, writer).on_probe(1005.0, figures)
    assert [(p.at, p.figure, p.value) for p in writer.points] == [
        (1005.0, Figure.PROBE_DECODE, 75.9),
        (1005.0, Figure.CYCLE, 29.9),
    ]


def run_figures_of(decode: float, accept: float | None, cycle: float) -> RunFigures:
    run = make_snapshot(spec=True).runs[0]
    return replace(run, decode_tok_s=decode, accept_length=accept, cycle_ms=cycle)


def test_the_writer_thread_puts_batches_in_the_store_and_writes_the_last_on_close(
    tmp_path: Path,
) -> None:
    path = tmp_path / "db"
    writer = HistoryWriter(path, URL, Limits(), on_error=print, on_drift=print, wall=lambda: T0)
    writer.start()
    writer.add(
        [Point(URL, 7.0, T0 + i, Figure.DECODE, 70.0 + i) for i in range(3)],
        [Mark(URL, T0, MarkKind.WATCH, "specmon started")],
    )
    writer.add([Point(URL, 7.0, T0 + 3, Figure.ACCEPT, 2.1)])
    writer.close()
    with Store(path, create=False) as store:
        assert [r.value for r in history_store.readings(store, URL, Figure.DECODE, 0, 2 * T0)] == [
            70.0,
            71.0,
            72.0,
        ]
        assert len(history_store.readings(store, URL, Figure.ACCEPT, 0, 2 * T0)) == 1
        assert [m.kind for m in history_store.marks(store, URL, 0, 2 * T0)] == [MarkKind.WATCH]


def test_a_store_that_cannot_be_written_is_said_once(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    said: list[str] = []
    writer = HistoryWriter(blocked / "db", URL, Limits(), on_error=said.append, on_drift=print)
    writer.start()
    writer.close()
    assert len(said) == 1 and said[0].startswith(f"history: cannot create {blocked / 'db'}")


def test_a_drift_in_the_store_is_found_after_the_writers_first_batch(tmp_path: Path) -> None:
    path = tmp_path / "db"
    readings = series(6, 3.07, 2.8, noise=0.1, seed=5)
    with Store(path) as store:
        history_store.append(
            store, [Point(URL, None, r.at, Figure.ACCEPT, r.value) for r in readings]
        )
    found: list[Drift] = []
    done = threading.Event()
    end = readings[-1].at + 1

    def on_drift(drift: Drift) -> None:
        found.append(drift)
        done.set()

    writer = HistoryWriter(
        path, URL, Limits(), on_error=print, on_drift=on_drift, wall=lambda: end, flush_every_s=0
    )
    writer.start()
    writer.add([Point(URL, None, end, Figure.DECODE, 70.0)])  # after the first batch
    assert done.wait(30)
    writer.close()
    assert [d.figure for d in found] == [Figure.ACCEPT]
    assert found[0].change < -0.05


def test_a_drafting_switch_is_marked_other_events_are_not() -> None:
    live, writer = _live(), Collected()
    tick = sample(1, info=server_info("spec"), metrics=None, seq=1)
    live.on_sample(tick)
    switched = Change("info", "server: drafts 3 tokens → off at 16 running", switch=True)
    recovered = Change("info", "server metrics: recovered")
    HistoryRecorder(live, writer).on_sample(tick, [recovered, switched])
    assert [(m.kind, m.text) for m in writer.marks] == [(MarkKind.SWITCH, switched.text)]
