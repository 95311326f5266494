"""Issue 25: no terminal size from 40x12 to 200x60 breaks the dashboard, whatever is open.

Each test resizes one running app through its sizes (a live resize, as a terminal split being
dragged), so a size is also reached from its neighbour. An exception raised by any widget at any
size fails the test when the app closes (`run_test` re-raises it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

import pytest
from conftest import BASE_URL
from test_dashboard import healthy, metrics_off, push_server, server_down, stale, waiting
from test_fleet_dashboard import _app as fleet_app
from test_fleet_dashboard import _shown as fleet_shown
from test_panels import _store_snapshots
from textual.events import Resize
from textual.geometry import Size
from textual.pilot import Pilot

from specmon.session.view import BenchView
from specmon.ui.app import SpecmonApp
from specmon.ui.screens.fleet import FleetScreen

Scenario = Callable[[Pilot[None]], Awaitable[None]]

# The sizes issue 25 found broken or named, the snapshot sizes, and the ends of the range.
NAMED = [(60, 15), (60, 18), (60, 24), (60, 30), (59, 24), (50, 24), (40, 30), (80, 24),
         (160, 50), (40, 12), (200, 60), (40, 60), (200, 12)]  # fmt: skip


def every_size(heights: Iterable[int], widths: Iterable[int]) -> list[tuple[int, int]]:
    """Every width 40..200 at each of `heights`, then every height 12..60 at each of `widths`."""
    sweep = [(w, h) for h in heights for w in range(40, 201)]
    return sweep + [(w, h) for w in widths for h in range(12, 61)] + NAMED


async def resize_through(pilot: Pilot[None], sizes: Iterable[tuple[int, int]]) -> None:
    """Resize to each size in turn; each is laid out and drawn before the next.

    `pilot.resize_terminal` without its wait for the CPU to go idle (20 ms or more a size): the
    app has handled the resize once every widget has handled what it posted.
    """
    app = pilot.app
    for width, height in sizes:
        size = Size(width, height)
        app._driver._size = size  # type: ignore[union-attr]  # the headless driver's, as Pilot does
        app.post_message(Resize(size, size))
        for _ in range(2):  # the resize, then what the widgets did about their new sizes
            await pilot._wait_for_screen()
            app.screen._on_timer_update()  # lay out and draw now


@pytest.mark.parametrize("state", [healthy, stale], ids=["baseline", "stale_baseline"])
async def test_the_dashboard_at_every_size(
    state: Callable[[], Scenario], make_app: Callable[..., SpecmonApp]
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await state()(pilot)
        await resize_through(pilot, every_size((15, 24, 50), (40, 60, 80, 160)))


async def _taking_a_baseline(pilot: Pilot[None]) -> None:
    await healthy()(pilot)
    pilot.app.session.bench_progress(BenchView("baseline", 1, 3, 4.0))


async def _no_baseline_server(pilot: Pilot[None]) -> None:
    await push_server(pilot)  # speculation on and no --baseline-url: `b` explains the choices


async def _snapshots_stored(pilot: Pilot[None]) -> None:
    await healthy()(pilot)
    await _store_snapshots(pilot.app)  # type: ignore[arg-type]


SCREENS = {  # what is on the screen: (the state, the keys that open it, a baseline server)
    "taking_baseline": (_taking_a_baseline, "", True),
    "waiting_for_baseline": (waiting(), "", False),
    "server_down": (server_down(), "", True),
    "metrics_off": (metrics_off(), "", True),
    "help": (healthy(), "question_mark", True),
    "info": (healthy(), "i", True),
    "compare": (_snapshots_stored, "c", True),
    "whatif": (healthy(), "w", True),
    "baseline_choice": (_no_baseline_server, "b", False),
    "snapshot_label": (healthy(), "s", True),
    "events_filter": (healthy(), "slash", True),
}


@pytest.mark.parametrize("shown", list(SCREENS))
async def test_every_screen_at_every_width(shown: str, make_app: Callable[..., SpecmonApp]) -> None:
    """Every width at 24 rows and every height at 60 columns, then back to the dashboard."""
    state, key, baseline_server = SCREENS[shown]
    app = make_app(BASE_URL if baseline_server else None)
    async with app.run_test(size=(80, 24)) as pilot:
        await state(pilot)
        if key:
            await pilot.press(key)
            assert app.screen is not app.screen_stack[0], f"{key} opened nothing"
        await resize_through(pilot, every_size((24,), (60,)))
        if key:
            await pilot.press("escape")
            await resize_through(pilot, NAMED)


async def test_the_fleet_and_a_server_opened_from_it_at_every_size() -> None:
    """The table, then (as issue 25 found it) 60x15 to 160x50 and Enter: the server's dashboard,
    then Esc back to the table."""
    app = fleet_app(8)
    async with app.run_test(size=(80, 24)) as pilot:
        await fleet_shown(8)(pilot)
        await resize_through(pilot, every_size((15, 24), (60, 80)))
        await resize_through(pilot, [(60, 15), (160, 50)])
        await pilot.press("down", "down", "enter")  # the stale baseline's server
        assert not isinstance(app.screen, FleetScreen)
        await resize_through(pilot, every_size((24,), (60,)))
        await pilot.press("escape")
        assert isinstance(app.screen, FleetScreen)
        await resize_through(pilot, NAMED)
