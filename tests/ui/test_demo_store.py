"""The demo's snapshots go to a temporary store unless --db names one; `s` says which (it said
"snapshot #2 saved" into a store that vanishes on exit)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import BASE_URL, NOW, baseline_snapshot, sample, server_info

from specmon.cli.demo import TEMPORARY_STORE, open_demo_store
from specmon.measure.snapshot import SnapshotKind
from specmon.ui.app import SpecmonApp


async def test_a_snapshot_saved_says_where_it_went(make_app: Callable[..., SpecmonApp]) -> None:
    snapshot = replace(await baseline_snapshot(NOW), id=2, label="before the change")
    for note, said in [
        (TEMPORARY_STORE, f"snapshot #2 saved (before the change; {TEMPORARY_STORE})"),
        ("", "snapshot #2 saved (before the change)"),  # a store of the user's: nothing to add
    ]:
        app = make_app(store_note=note)
        async with app.run_test(size=(80, 24)) as pilot:
            app.session.bench_done(snapshot, SnapshotKind.RUN, None)
            await pilot.pause()
        assert app.session.live.events[-1].text == said


def test_the_demo_keeps_its_snapshots_only_in_a_store_given(tmp_path: Path) -> None:
    with ExitStack() as stack:
        temporary, note = open_demo_store(argparse.Namespace(db=None), stack)
        assert note == TEMPORARY_STORE
    assert not temporary.path.exists()  # gone on exit, as it says
    kept = tmp_path / "kept.db"
    with ExitStack() as stack:
        store, note = open_demo_store(argparse.Namespace(db=str(kept)), stack)
        assert (store.path, note) == (kept, "")
    assert kept.exists()


async def test_the_demo_takes_a_baseline_when_the_store_has_none(
    make_app: Callable[..., SpecmonApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`auto_baseline` (the demo): the store is asked first (`StoreBaseline`, as every
    dashboard); with none there, one baseline is taken at once, without "press b" in the log."""
    app = make_app(auto_baseline=True)
    started: list[tuple[SnapshotKind, str]] = []
    monkeypatch.setattr(
        app.session.feed,
        "start_bench",
        lambda kind, url, origin, label: started.append((kind, url)),
    )
    async with app.run_test(size=(80, 24)) as pilot:
        for seq in (1, 2):
            app.session.sample(sample(float(seq), server_info(), None, seq=seq))
            await pilot.pause()
    assert started == [(SnapshotKind.BASELINE, BASE_URL)]
    assert not [e.text for e in app.session.live.events if "press b" in e.text]
