"""When the dashboard's heap work runs: full garbage collections where no key waits for them.

A full collection holds the interpreter for as long as it walks every tracked object: 15 ms at
start, 70-110 ms at 160x50 once the screens, themes and help have been drawn (each line Textual
draws is a Strip, with the Strips its caches keep). CPython runs one at whatever allocation tips
its count over, a key's handler included; `gc_deferral` leaves them to this keeper, which runs
one that is due
- after a key, once the terminal has been quiet for `QUIET_S` after the key's last write: the
  frame is out, and the next key is a human reaction (150 ms or more) away;
- on the housekeeping timer, when no key came for `KEYS_QUIET_S` (an idle dashboard);
and hands freed pages back to the OS on that timer (`malloc_trim`). Each does nothing where its
tuning stood down.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from specmon.ui.tuning.gc_deferral import (
    collect_if_due,
    defer_full_collections,
    full_collection_due,
    resume_full_collections,
)
from specmon.ui.tuning.malloc_trim import release_freed_memory
from specmon.ui.tuning.render_cache import release_render_caches

QUIET_S = 0.04
"""After a key, the terminal's quiet time that says its frames are out (a theme's second frame
follows its first by ~25 ms)."""
KEYS_QUIET_S = 1.0
"""The housekeeping timer collects only once no key came for this long."""
TIDY_EVERY_S = 10.0
"""The housekeeping timer's period (a trim takes under 1 ms)."""


class HeapKeeper:
    """Runs the due full collections after a key's frames, or when no key comes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """Nothing wanted yet; `start` takes the full collections over."""
        self._clock = clock
        self._last_key = -math.inf
        self._wanted = False
        self._pending: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """CPython's own full collections off: this keeper runs them (on this event loop)."""
        self._loop = asyncio.get_running_loop()
        defer_full_collections()

    def stop(self) -> None:
        """CPython runs its full collections itself again; nothing left scheduled."""
        if self._pending is not None:
            self._pending.cancel()
        self._loop = None
        resume_full_collections()

    def key(self) -> None:
        """A key was handled: a due collection waits for its frames (`written`)."""
        self._last_key = self._clock()
        if full_collection_due():
            self._wanted = True
            self.written()

    def written(self) -> None:
        """The terminal was written to (on the event loop): a wanted collection waits again."""
        if not self._wanted or self._loop is None:
            return
        if self._pending is not None:
            self._pending.cancel()
        self._pending = self._loop.call_later(QUIET_S, self._collect)

    def tidy(self) -> None:
        """The housekeeping timer: a due collection if no key came lately; freed pages back."""
        if self._clock() - self._last_key >= KEYS_QUIET_S:
            collect_if_due(release_render_caches)
        release_freed_memory()

    def _collect(self) -> None:
        self._wanted = False
        self._pending = None
        collect_if_due(release_render_caches)
