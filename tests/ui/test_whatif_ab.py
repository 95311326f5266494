"""The dashboard's `w` screen finds the store's A/B of the watched server's configuration and
sets it beside the load bands (issue 27 item 2)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from conftest import NOW, baseline_snapshot, server_info
from textual.containers import Vertical
from textual.widgets import DataTable, Static

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
        # Taken on another server of this configuration: named with its URL, as check does.
        assert spec.url != app.session.live.url
        assert f"ab #{ids[0]} on {spec.url}, 59m ago: " in notes, notes
        assert "Crossover: speculation " in notes


async def test_at_80x24_the_keys_scroll_w_to_its_by_load_half(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Issue 38: at 80x24 `w`'s by-load table and `best:` line lay below the screen's last line,
    out of reach of every key (PgDn moved the table's cursor). PgDn and End scroll the screen,
    the status line says so, and the table's cursor stays."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await healthy()(pilot)
        await pilot.press("w")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        box = screen.query_one("#whatif", Vertical)
        table = screen.query_one(DataTable)
        assert box.max_scroll_y > 0 and box.scroll_y == 0
        assert "PgDn/PgUp: more" in str(screen.query_one("#whatif-status", Static).render())
        cursor = table.cursor_row
        await pilot.press("pagedown")
        await pilot.pause()
        assert box.scroll_y > 0 and table.cursor_row == cursor
        await pilot.press("end")
        await pilot.pause()
        assert box.scroll_y == box.max_scroll_y
        await pilot.press("home")
        await pilot.pause()
        assert box.scroll_y == 0
