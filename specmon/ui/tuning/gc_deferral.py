"""Full garbage collections run where no key waits for them; long-lived objects frozen.

CPython's full garbage collection walks every tracked object, the ~100,000 of Textual's
widgets, styles and the imported modules included: 50-100 ms during which no key is handled.
docs/performance.md#soak has the measurements. Frozen, they still took 30-100 ms while screens
opened and closed (each leaves its widgets to the collector): a full collection came every ~2 s
then, and at 160x50 one to four presses in 20 of the keys that switch screens waited 100-200 ms
behind one. CPython runs a full collection after `full_every()` collections of the middle
generation, at whatever allocation tips it over, a key's handler included. Here it is due by the
same count but runs when the dashboard says (`collect_if_due`, from `heap_keeper.py`): once a
key's frames are out, a human reaction before the next key, and on its housekeeping timer.

This relies on the generational collector of CPython 3.11-3.13 (three generations, the third's
threshold counting middle collections). Python 3.14's incremental collector reads those
thresholds otherwise, so there this stands down (as it does if the thresholds are not three
counts): pyproject.toml bounds the Pythons specmon runs on to those tested.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable

from specmon.ui.tuning import Mismatch, active

PRIVATE_NAMES = ()
"""Only the gc module's public API; a tuning because it changes how the interpreter collects."""
LAST_GENERATIONAL = (3, 13)
"""The last CPython whose full collections this was tested with."""
_NEVER = 1 << 30

_full_every = 0


def check() -> None:
    """A generational collector with three thresholds, as in CPython 3.11-3.13."""
    if sys.version_info[:2] > LAST_GENERATIONAL:
        raise Mismatch(
            f"Python {sys.version_info[0]}.{sys.version_info[1]}'s collector is not "
            f"the generational one of 3.11-3.13"
        )
    thresholds, counts = gc.get_threshold(), gc.get_count()
    if len(thresholds) != 3 or len(counts) != 3 or not thresholds[2] > 0:
        raise Mismatch(f"gc thresholds {thresholds} and counts {counts} are not three counts")


def apply() -> None:
    """Take CPython's rule for a full collection (it stays CPython's until `defer`)."""
    global _full_every
    _full_every = gc.get_threshold()[2]


def full_every() -> int:
    """CPython's own rule: a full collection once the middle generation was collected this
    often (0 when this tuning is not installed)."""
    return _full_every


def freeze_long_lived() -> None:
    """Leave every object tracked now out of future collections (`gc.freeze`), if installed.

    Call it once the long-lived objects exist (the widgets mounted); `thaw` undoes it. Garbage
    of that moment is kept too: ~1,500 objects at the dashboard's start, where collecting them
    first would pause for ~40 ms.
    """
    if active("gc_deferral"):
        gc.freeze()


def thaw() -> None:
    """Put the frozen objects back under the garbage collector (`gc.unfreeze`)."""
    gc.unfreeze()


def defer_full_collections() -> None:
    """Leave full collections to `collect_if_due`, if installed (the younger generations run
    as before)."""
    if active("gc_deferral"):
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, _NEVER)


def resume_full_collections() -> None:
    """CPython runs its full collections itself again."""
    young, middle, full = gc.get_threshold()
    if full == _NEVER:
        gc.set_threshold(young, middle, _full_every)


def full_collection_due() -> bool:
    """Whether CPython would have run a full collection by now (deferred ones only)."""
    return active("gc_deferral") and gc.get_count()[2] >= _full_every


def collect_if_due(release: Callable[[], object] = lambda: None) -> None:
    """Run the full collection CPython would have run, if it is due; `release` runs first, to
    drop what only a cache still holds, so that this collection frees it."""
    if full_collection_due():
        release()
        gc.collect()
