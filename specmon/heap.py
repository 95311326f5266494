"""The process's heap over a long session: freed pages handed back, long-lived objects frozen.

A dashboard left open all day allocates and frees a few KB per scrape. glibc keeps freed pages
mapped where live objects sit among them, so the RSS that `top` shows creeps up although
nothing is kept (the soak, at 50 samples a second: 5-7 MiB in six minutes, all of it given back
by `malloc_trim`). And CPython's full garbage collection walks every tracked object, the
~100,000 of Textual's widgets, styles and the imported modules included: 50-100 ms during
which no key is handled. docs/performance.md#soak has the measurements.
"""

from __future__ import annotations

import ctypes
import gc
import sys

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
