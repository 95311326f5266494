"""The dashboard's `w` screen finds the store's A/B of the watched server's configuration and
sets it beside the load bands (issue 27 item 2)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from conftest import NOW, baseline_snapshot, server_info
from textual.widgets import Static

from specmon.analysis.ab_runs import AbRun, Side
from specmon.ui.app import SpecmonApp
from specmon.ui.screens.whatif import WhatIfScreen
from tests.ui.test_dashboard import healthy


async def test_w_shows_the_stored_ab_of_this_configuration(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        assert app.session.store is not None
        plain = replace(await baseline_snapshot(NOW - 3600), id=None)
        spec = replace(plain, server=server_info(), created_at=NOW - 3540)
        store = app.session.store
        ids = store.save_ab([AbRun(1, Side.BASELINE, plain), AbRun(1, Side.SPECULATIVE, spec)])
        await healthy()(pilot)
        await pilot.press("w")
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        assert screen.view.ab is not None and screen.view.ab.ab_id == ids[0]
        assert [lv.concurrency for lv in screen.view.ab.levels] == [1]
        notes = str(screen.query_one("#whatif-notes", Static).render())
        assert f"ab #{ids[0]}, 59m ago: " in notes, notes
        assert "Crossover: speculation " in notes
