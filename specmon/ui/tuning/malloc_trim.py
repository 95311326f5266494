"""Freed heap pages handed back to the OS (glibc's `malloc_trim`, through ctypes).

A dashboard left open all day allocates and frees a few KB per scrape. glibc keeps freed pages
mapped where live objects sit among them, so the RSS that `top` shows creeps up although
nothing is kept (the soak, at 50 samples a second: 5-7 MiB in six minutes, all of it given back
by `malloc_trim`). The dashboard's housekeeping timer calls `release_freed_memory`
(`heap_keeper.py`). Elsewhere than glibc this stands down.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

from specmon.ui.tuning import Mismatch

PRIVATE_NAMES = ()
"""glibc's public API, called from outside the interpreter."""

_trim: Callable[[int], int] | None = None


def check() -> None:
    """glibc, with `malloc_trim`."""
    if sys.platform != "linux" or getattr(ctypes.CDLL(None), "malloc_trim", None) is None:
        raise Mismatch("no glibc malloc_trim here")


def apply() -> None:
    """`release_freed_memory` trims from now on."""
    global _trim
    _trim = ctypes.CDLL(None).malloc_trim


def release_freed_memory() -> None:
    """Hand freed heap pages back to the OS (installed; elsewhere nothing happens)."""
    if _trim is not None:
        _trim(0)
