"""The process's heap over a long session: freed pages handed back, long-lived objects frozen,
full collections run where no key waits for them.

A dashboard left open all day allocates and frees a few KB per scrape. glibc keeps freed pages
mapped where live objects sit among them, so the RSS that `top` shows creeps up although
nothing is kept (the soak, at 50 samples a second: 5-7 MiB in six minutes, all of it given back
by `malloc_trim`). And CPython's full garbage collection walks every tracked object, the
~100,000 of Textual's widgets, styles and the imported modules included: 50-100 ms during
which no key is handled. docs/performance.md#soak has the measurements. Frozen, they still
took 30-100 ms while screens opened and closed (each leaves its widgets to the collector): a
full collection came every ~2 s then, and at 160x50 one to four presses in 20 of the keys that
switch screens waited 100-200 ms behind one. CPython runs a full collection after `FULL_EVERY`
collections of the middle generation, at whatever allocation tips it over, a key's handler
included. Here it is due by the same count but runs when the dashboard says (`collect_if_due`,
from `ui/heap_keeper.py`): once a key's frames are out, a human reaction before the next key,
and on its housekeeping timer.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from collections.abc import Callable

FULL_EVERY = gc.get_threshold()[2]
"""CPython's own rule: a full collection once the middle generation was collected this often."""
_NEVER = 1 << 30


_MALLOC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", None) if sys.platform == "linux" else None


def release_freed_memory() -> None:
    """Hand freed heap pages back to the OS (glibc only; elsewhere nothing happens)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def freeze_long_lived() -> None:
    """Leave every object tracked now out of future collections (`gc.freeze`).

    Call it once the long-lived objects exist (the widgets mounted); `thaw` undoes it. Garbage
    of that moment is kept too: ~1,500 objects at the dashboard's start, where collecting them
    first would pause for ~40 ms.
    """
    gc.freeze()


def thaw() -> None:
    """Put the frozen objects back under the garbage collector (`gc.unfreeze`)."""
    gc.unfreeze()


def defer_full_collections() -> None:
    """Leave full collections to `collect_if_due` (the younger generations run as before)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, _NEVER)


def resume_full_collections() -> None:
    """CPython runs its full collections itself again."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)


def full_collection_due() -> bool:
    """Whether CPython would have run a full collection by now (`FULL_EVERY`)."""
    return gc.get_count()[2] >= FULL_EVERY


def collect_if_due(release: Callable[[], object] = lambda: None) -> None:
    """Run the full collection CPython would have run, if it is due; `release` runs first, to
    drop what only a cache still holds, so that this collection frees it."""
    if full_collection_due():
        release()
        gc.collect()
