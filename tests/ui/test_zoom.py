"""`z` zooms the sparklines through the store's history: 5 min → 1 h → 24 h → all → 5 min, read
in a worker; restarts are marked on the axis."""

from __future__ import annotations

from collections.abc import Callable

from specmon.history import Figure, Mark, MarkKind, Point
from specmon.session.history_zoom import COLUMNS
from specmon.storage import history_store
from specmon.ui.app import SpecmonApp
from specmon.ui.widgets.history_spark import MARK, HistorySpark, marked
from tests.ui.conftest import NOW, URL
from tests.ui.test_dashboard import push_server


def _a_day_of_history(app: SpecmonApp) -> None:
    """A reading a minute for 30 hours: tok/s 100 + the hours ago, accept length 2.5; a restart
    3 hours ago."""
    assert app.session.store is not None
    minutes = range(1, 30 * 60)
    points = [Point(URL, None, NOW - 60 * m, Figure.DECODE, 100.0 + m / 60) for m in minutes]
    points += [Point(URL, None, NOW - 60 * m, Figure.ACCEPT, 2.5) for m in minutes]
    restart = Mark(URL, NOW - 3 * 3600, MarkKind.RESTART, "server restarted")
    history_store.append(app.session.store, points, [restart])


async def test_z_cycles_the_span_from_the_store_and_back_to_the_live_minutes(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    _a_day_of_history(app)
    async with app.run_test(size=(160, 50)) as pilot:
        await push_server(pilot)
        await pilot.pause()
        assert app._last_view is not None
        live = app._last_view.decode
        assert live.history_span == "5 min" and live.history_points == 60
        spans = {}
        for label in ("1 h", "24 h", "all"):
            await pilot.press("z")
            await app.workers.wait_for_complete()
            await pilot.pause()
            decode = app._last_view.decode
            assert decode.history_span == label and decode.history_points == COLUMNS
            assert app._last_view.spec.accept_history_span == label
            spans[label] = decode
            caption = app.query_one("#decode-spark", HistorySpark)._caption
            assert caption.startswith(f"server tok/s, all requests, {label}")
            assert app._last_view.events[-1].text == f"sparklines: {label} (z)"
        # Oldest first: the hour's line runs from ~101 to ~100, the day's from ~124 down.
        assert 100.8 < spans["1 h"].history[0] <= 101.05 and spans["1 h"].history[-1] < 100.2
        assert 123 < spans["24 h"].history[0] < 124.1
        assert spans["1 h"].history_marks == ()
        assert spans["24 h"].history_marks == (COLUMNS // 8 - 1,)  # 3 h of 24 h from the right
        assert spans["all"].history[0] > 129  # since the history began, 30 h ago
        await pilot.press("z")
        await pilot.pause()
        assert app.session.live.zoomed is None
        assert app._last_view.decode.history == live.history
        assert app._last_view.decode.history_span == "5 min"


async def test_z_without_a_store_says_so(make_app: Callable[..., SpecmonApp]) -> None:
    app = make_app()
    app.session.store = None
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("z")
        await pilot.pause()
        assert app._last_view is not None
        assert app._last_view.events[-1].text == "no store: no history to zoom into"
        assert app._last_view.decode.history_span == "5 min"


def test_marks_go_on_the_bottom_row_at_their_points_from_the_newest() -> None:
    row = "▁▂▃▄▅▆"  # six cells
    assert marked(row, (0,), 6) == "▁▂▃▄▅" + MARK
    # Two cells a point: the point's newer cell (point 1 is cells 2–3, point 2 cells 0–1).
    assert marked(row, (1, 2), 3) == "▁" + MARK + "▃" + MARK + "▅▆"
    assert marked(row, (9,), 6) == row  # a mark older than the line is left out
    assert marked("", (0,), 1) == ""
