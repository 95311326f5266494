"""The dashboard against real loopback servers (the simulator): baselines, hangs, recovery.

These wait for real workers, never for fixed times: each wait is for a condition, bounded.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from live_helpers import until

from specmon.config import MonitorConfig, Targets
from specmon.history import Figure, MarkKind
from specmon.session.server_session import ServerSession, dashboard_session
from specmon.sim import SimConfig, SimThread
from specmon.sim.record import EmittedRequest
from specmon.sim.server import MAX_EMITTED
from specmon.storage import history_store
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui.app import SpecmonApp
from specmon.wording import BUFFERED_STREAM

FAST = SimConfig(plain_step_ms=4.0, cycle_ms=7.0, accept_length=2.1, ttft_ms=5.0, seed=11)
PLAIN = replace(FAST, speculative_algorithm=None)  # the simulator drops the other spec args


@pytest.fixture
def sims() -> Iterator[tuple[SimThread, SimThread]]:
    with SimThread(FAST) as spec, SimThread(PLAIN) as base:
        yield spec, base


def _app(spec: SimThread, base: SimThread | None, store: Store, **kw: object) -> SpecmonApp:
    config = MonitorConfig(
        url=spec.url,
        baseline_url=base.url if base else None,
        interval=0.2,
        probe_every=0.2,
        probe_tokens=120,
        baseline_runs=3,
        read_timeout=1.0,
        **kw,
    )  # type: ignore[arg-type]
    targets = Targets(
        Target(spec.url, read_timeout=1.0), Target(base.url, read_timeout=1.0) if base else None
    )
    return SpecmonApp(dashboard_session(config, targets, store))


async def test_b_takes_a_baseline_matching_what_the_server_emitted(
    sims: tuple[SimThread, SimThread], tmp_path: Path
) -> None:
    spec, base = sims
    with Store(tmp_path / "db") as store:
        app = _app(spec, base, store)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.session.live.server.info is not None)
            await pilot.press("b")
            await until(pilot, lambda: app.session.live.baseline.snapshot is not None)
            await until(pilot, lambda: len(app.session.live.probes) >= 5)
            # The probe paused and its last run in: the server's finished requests and the
            # session's probes are then the same runs (a run the server has finished but the
            # session not yet read would shift the two by one on a busy machine).
            await pilot.press("p")
            await pilot.pause(0.5)  # a run in flight when paused comes in meanwhile, or below
            await until(pilot, lambda: app.session.probes_ok == len(spec.server.emitted))
            view = app.session.view()
            assert app.session.probes_ok == len(spec.server.emitted) < MAX_EMITTED
            emitted = base.server.emitted[-3:]  # the three timed runs after the warm-up
            truth = _pooled(emitted)  # Σ decode tokens / Σ decode seconds, as specmon pools
            assert view.baseline.tok_s == pytest.approx(truth, rel=0.03)
            assert view.baseline.current_runs == len(app.session.live.probes)
            spec_truth = _pooled(spec.server.emitted[-len(app.session.live.probes) :])
            comparison = view.baseline.comparison
            assert comparison is not None
            assert 1 + comparison.speedup.value == pytest.approx(spec_truth / truth, rel=0.03)
            assert view.baseline.validity is not None and view.baseline.validity.confirmed
            assert store.list()[0].id == view.baseline.snapshot_id


async def test_b_refused_as_buffered_benches_again_and_says_so(
    sims: tuple[SimThread, SimThread], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline's stream that arrived buffered (the client starved of a CPU) says nothing of
    the server: `b` benches again by itself, the events log says why, and the baseline comes."""
    spec, base = sims
    note = ServerSession.bench_note

    def starved_once(sink: ServerSession, wall: float, line: str) -> None:
        if line.endswith("benching it again"):  # heard before the second attempt starts
            base.server.faults.buffer_stream = False
        note(sink, wall, line)

    monkeypatch.setattr(ServerSession, "bench_note", starved_once)
    with Store(tmp_path / "db") as store:
        app = _app(spec, base, store)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.session.live.server.info is not None)
            base.server.faults.buffer_stream = True
            await pilot.press("b")
            await until(pilot, lambda: app.session.live.baseline.snapshot is not None)
            [again] = [e.text for e in app.session.live.events if "benching it again" in e.text]
            assert BUFFERED_STREAM in again and base.url in again
            assert not any("failed" in e.text for e in app.session.live.events)
            assert len(store.list()) == 1


def _pooled(records: Sequence[EmittedRequest]) -> float:
    """The simulator's own pooled decode speed of some requests."""
    tokens = sum(r.chunk_completion_tokens[-1] - r.chunk_completion_tokens[0] for r in records)
    seconds = sum(r.chunk_send_mono[-1] - r.chunk_send_mono[0] for r in records)
    return tokens / seconds


async def test_hung_server_keeps_keys_answering_and_recovers(
    sims: tuple[SimThread, SimThread], tmp_path: Path
) -> None:
    spec, _ = sims
    with Store(tmp_path / "db") as store:
        app = _app(spec, None, store)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(
                pilot,
                lambda: app._last_view is not None and app._last_view.identity.state == "live",
            )
            spec.server.faults.hang.add("*")
            await until(pilot, lambda: app._last_view.identity.state != "live")  # type: ignore[union-attr]
            await pilot.press("p")  # keys answer while every request hangs
            assert app.session.live.probe_paused
            spec.server.faults.clear()
            await pilot.press("p")
            await until(pilot, lambda: app._last_view.identity.state == "live")  # type: ignore[union-attr]
            await until(
                pilot,
                lambda: app.session.live.probe_error is None and len(app.session.live.probes) > 0,
            )


async def test_the_dashboard_records_its_history_and_writes_the_last_batch_on_quitting(
    sims: tuple[SimThread, SimThread], tmp_path: Path
) -> None:
    spec, _ = sims
    with Store(tmp_path / "db") as store:
        app = _app(spec, None, store)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: len(app.session.live.probes) >= 2)
            await until(
                pilot, lambda: app.session.live.server.window.decode_tok_s(10.0) is not None
            )
            assert app.session.history is not None
        # Quitting wrote what the writer held (its batches are 5 s apart).
        end = time.time() + 1
        accept = history_store.readings(store, spec.url, Figure.ACCEPT, 0, end)
        decode = history_store.readings(store, spec.url, Figure.DECODE, 0, end)
        marks = history_store.marks(store, spec.url, 0, end)
    assert len(accept) >= 2 and all(r.value == pytest.approx(2.1, rel=0.3) for r in accept)
    assert decode and all(r.span == 0 for r in decode)
    assert [m.kind for m in marks] == [MarkKind.WATCH]


async def test_no_history_and_a_shared_feed_record_nothing(
    sims: tuple[SimThread, SimThread], tmp_path: Path
) -> None:
    spec, _ = sims
    with Store(tmp_path / "db") as store:
        off = _app(spec, None, store, history=False)
        async with off.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: len(off.session.live.probes) >= 1)
            assert off.session.history is None
        # As a `specmon web` tab: a session over a feed this process does not own.
        tab = SpecmonApp(ServerSession.of_config(off.config, off.session.feed, store))
        async with tab.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: len(tab.session.live.probes) >= 1)
            assert tab.session.history is None
        assert history_store.targets(store) == []
        assert history_store.marks(store, spec.url, 0, time.time() + 1) == []
