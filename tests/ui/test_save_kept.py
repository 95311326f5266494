"""The dashboard's `b` whose save meets another process's lock: the events log says it waits,
Esc is the way out, and the baseline is kept in a file for `snapshots import`, not lost."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from fault_cases import FAST
from live_helpers import until
from test_fault_dashboard import _app, _healthy, _said

from specmon.session import watch as app_module
from specmon.session.feed import LocalFeed
from specmon.sim import SimThread
from specmon.storage import saving
from specmon.storage.store import Store
from specmon.storage.unsaved import import_unsaved, pending


async def test_esc_while_a_baseline_waits_for_the_lock_keeps_it_in_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "INFO_EVERY_S", 0.2)
    monkeypatch.setattr(saving, "ATTEMPT_S", 0.05)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    db = tmp_path / "db"
    with SimThread(replace(FAST, speculative_algorithm=None)) as plain, Store(db) as store:
        app = _app(plain, store)
        other = sqlite3.connect(db, isolation_level=None)
        try:
            async with app.run_test(size=(80, 24)) as pilot:
                await until(pilot, lambda: _healthy(app))
                other.execute("BEGIN IMMEDIATE")  # the other process's write lock
                await pilot.press("b")
                feed = app.session.feed
                assert isinstance(feed, LocalFeed)
                await until(pilot, lambda: feed.save_waiting)
                assert _said(app, r"is locked by another process: waiting to save the snapshot")
                assert _said(app, r"Esc keeps it in a file instead")
                await pilot.press("escape")  # the way out
                await until(pilot, lambda: _said(app, r"kept in .*unsaved-.*\.json"))
                assert not feed.saving and app.session.live.baseline.snapshot is None
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert store.list() == []
        [kept] = pending()
        ids = import_unsaved(store, kept)
        assert ids is not None and [s.id for s in store.list()] == ids
        assert store.list()[0].server.speculative is None  # the baseline it took
