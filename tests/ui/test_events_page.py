"""`l`: the events log in full (issue 38: at 80x24 the panel showed 2 events, each cut, a dump's
path included, and could be neither scrolled nor expanded)."""

from __future__ import annotations

from collections.abc import Callable

from conftest import NOW
from textual.containers import VerticalScroll
from textual.widgets import Static

from specmon.session.view import Event
from specmon.ui.app import SpecmonApp
from specmon.ui.screens.events import EventsScreen
from specmon.ui.widgets.events_log import EventsLog

PATH = "/home/someone/.local/state/specmon/dumps/specmon-20261205-201530.svg"


async def test_l_shows_every_event_wrapped_whole_and_scrollable(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        log = app.query_one(EventsLog)
        events = tuple(Event(NOW + i, "info", f"event number {i}") for i in range(40))
        events += (Event(NOW + 40, "info", f"dumped the screen to {PATH} and {PATH[:-4]}.txt"),)
        log.events = events
        await pilot.pause()
        shown = str(log.render())
        assert "event number 0" not in shown  # the newest few (each cut to a line by the CSS)
        assert log.border_subtitle == "l: all"
        await pilot.press("l")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, EventsScreen)
        page = screen.query_one("#events-page", VerticalScroll)
        text = str(screen.query_one("#events-all", Static).render())
        assert "event number 0\n" in text and f"{PATH[:-4]}.txt" in text  # all, whole
        assert page.max_scroll_y > 0 and page.scroll_y == page.max_scroll_y  # at the newest
        await pilot.press("home")
        await pilot.pause()
        assert page.scroll_y == 0
        await pilot.press("escape")
        assert not isinstance(app.screen, EventsScreen)
        # The filter (`/`) holds on the page too.
        log.filter = "number 3"
        await pilot.press("l")
        await pilot.pause()
        text = str(app.screen.query_one("#events-all", Static).render())
        assert "number 3" in text and "number 4" not in text and PATH not in text
        assert app.screen.query_one("#events-page").border_title == "Events holding 'number 3': 11"
