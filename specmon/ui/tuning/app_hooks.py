"""Where the dashboard's run meets the tunings: the terminal driver it asks for, and the heap's
upkeep from its mount to its unmount.

On mount the long-lived objects are frozen once the first frame is drawn (`gc_deferral`), the
heap keeper takes the full collections over, times them by the terminal's writes (the tuned
driver reports them) and tidies on its timer; on unmount all of that is undone, so that the
next app (tests run many) starts from the interpreter as it was. Each does nothing where its
tuning stood down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.driver import Driver

from specmon.ui.tuning import active
from specmon.ui.tuning.gc_deferral import freeze_long_lived, thaw
from specmon.ui.tuning.heap_keeper import TIDY_EVERY_S, HeapKeeper


def driver_class(default: type[Driver]) -> type[Driver]:
    """The driver to run with: on Linux and macOS one that acts on Esc and q at once
    (installed), else Textual's `default`."""
    if not active("driver"):
        return default
    # Imported once installed: it imports Textual's private modules.
    from specmon.ui.tuning.driver import prompt_driver

    return prompt_driver(default)


def start_upkeep(app: App[Any], heap: HeapKeeper) -> None:
    """On mount: freeze what the first frame leaves, and have `heap` keep the heap."""
    app.call_after_refresh(freeze_long_lived)
    heap.start()
    _report_writes(app, heap.written)  # the terminal's writes time the collections
    app.set_interval(TIDY_EVERY_S, heap.tidy)


def stop_upkeep(app: App[Any], heap: HeapKeeper) -> None:
    """On unmount: the garbage collector as it was."""
    _report_writes(app, None)
    thaw()
    heap.stop()


def _report_writes(app: App[Any], written: Callable[[], None] | None) -> None:
    """Have the driver call `written` after each write, where it is the tuned one."""
    if active("driver"):
        from specmon.ui.tuning.driver import prompt_driver_of  # as in `driver_class`

        driver = prompt_driver_of(app)
        if driver is not None:
            driver.after_write = written
