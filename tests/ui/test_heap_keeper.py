"""Full collections run where no key waits for them; a closed screen's render caches are freed."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator

import pytest
from textual._styles_cache import StylesCache
from textual.widget import Widget
from tuned import needs

from specmon.ui.app import SpecmonApp
from specmon.ui.tuning.gc_deferral import full_every
from specmon.ui.tuning.heap_keeper import KEYS_QUIET_S, QUIET_S, HeapKeeper
from specmon.ui.tuning.render_cache import release_render_caches

pytestmark = needs("gc_deferral", "render_cache")


@pytest.fixture
def full_collections() -> Iterator[list[int]]:
    """Every full collection's count, as it happens."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            seen.append(1)

    gc.callbacks.append(note)
    yield seen
    gc.callbacks.remove(note)


def make_due() -> None:
    """As many middle-generation collections as CPython counts before a full one."""
    for _ in range(full_every()):
        gc.collect(1)


async def test_a_due_collection_waits_until_the_terminal_is_quiet(
    full_collections: list[int],
) -> None:
    keeper = HeapKeeper()
    keeper.start()
    try:
        assert gc.get_threshold()[2] > 1_000_000  # CPython's own full collections are off
        make_due()
        assert full_collections == []
        keeper.key()
        for _ in range(4):  # the key's frames, each within QUIET_S of the one before
            await asyncio.sleep(QUIET_S / 2)
            keeper.written()
        assert full_collections == []
        await asyncio.sleep(QUIET_S * 3)
        assert full_collections == [1]
        keeper.written()  # nothing wanted now: writes schedule nothing
        await asyncio.sleep(QUIET_S * 3)
        assert full_collections == [1]
    finally:
        keeper.stop()
    assert gc.get_threshold()[2] == full_every()


async def test_the_timer_collects_only_once_keys_stop(full_collections: list[int]) -> None:
    now = [100.0]
    keeper = HeapKeeper(clock=lambda: now[0])
    keeper.start()
    try:
        keeper.key()  # nothing due: no collection wanted
        make_due()
        keeper.tidy()
        assert full_collections == []  # a key came just now
        now[0] += KEYS_QUIET_S
        keeper.tidy()
        assert full_collections == [1]
        keeper.tidy()
        assert full_collections == [1]  # no longer due
    finally:
        keeper.stop()


async def test_closed_screens_leave_no_render_cache(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Textual's `get_inner_outer` cache keeps dead widgets' StylesCaches (textual#6665)."""

    def orphans() -> int:
        gc.collect()
        live = {id(w._styles_cache) for w in gc.get_objects() if isinstance(w, Widget)}
        return sum(isinstance(o, StylesCache) and id(o) not in live for o in gc.get_objects())

    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        app.heap.stop()  # its collections would release them: here the test does
        for _ in range(3):
            await pilot.press("i")
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
        gc.unfreeze()  # the dashboard froze its widgets: count them all
        assert orphans() > 0
        release_render_caches()
        assert orphans() == 0
