"""Textual's Strip with its seven caches made on first use, not in its constructor.

Every line Textual draws is a Strip, and each Strip made seven empty `FIFOCache`s as it was
built (textual/strip.py, Textual 8): a full repaint at 160x50 builds ~1,400 Strips, most of
which are never cropped, divided, styled or filtered again. Building those caches was 15% of a
full repaint's time (py-spy over `t` at 160x50), and 7 more tracked objects a line for the
garbage collector. Here each cache slot is filled on its first read, with a cache of the size
Textual gives it; a Strip that never uses a cache never has one. What the Strips draw does not
change (the dashboard's snapshot tests draw through it).

This replaces `Strip.__init__` (its other five fields as Textual sets them) and wraps the seven
slots; `check` stands it down if Strip's slots or its constructor's signature differ from
Textual 8.2's.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from rich.segment import Segment
from textual.cache import FIFOCache
from textual.strip import Strip

from specmon.ui.tuning import Mismatch

CACHES = ("_divide_cache", "_crop_cache", "_style_cache", "_filter_cache",
          "_line_length_cache", "_crop_extend_cache", "_offsets_cache")  # fmt: skip
"""Strip's cache slots (Textual 8)."""
FIELDS = ("_segments", "_cell_length", "_render_cache", "_link_ids", "_cell_count")
"""Strip's other slots, which its constructor sets."""
PRIVATE_NAMES = (*CACHES, *FIELDS, "_maxsize")
"""Strip's slots, and FIFOCache's size."""
_PARAMETERS = [("self", inspect.Parameter.empty), ("segments", inspect.Parameter.empty),
               ("cell_length", None)]  # fmt: skip
"""Textual 8.2's `Strip.__init__`'s parameters and defaults, which `_init` stands in for."""


class _MadeOnFirstUse:
    """A Strip cache slot that holds a new FIFOCache of `size` from its first read."""

    def __init__(self, slot: Any, size: int) -> None:
        self._slot = slot
        self._size = size

    def __get__(self, strip: Strip | None, owner: type | None = None) -> Any:
        if strip is None:
            return self
        try:
            return self._slot.__get__(strip, owner)
        except AttributeError:
            cache: FIFOCache[Any, Any] = FIFOCache(self._size)
            self._slot.__set__(strip, cache)
            return cache

    def __set__(self, strip: Strip, value: Any) -> None:
        self._slot.__set__(strip, value)


def _init(self: Strip, segments: Iterable[Segment], cell_length: int | None = None) -> None:
    # Textual's Strip.__init__ without the caches.
    self._segments = list(segments)
    self._cell_length = cell_length
    self._render_cache = None
    self._link_ids = None
    self._cell_count = None


def check() -> None:
    """Strip has these slots, as member descriptors, and Textual 8.2's constructor."""
    slots, known = set(Strip.__slots__), {*CACHES, *FIELDS}
    if slots != known:
        change = [f"+{name}" for name in sorted(slots - known)]
        change += [f"-{name}" for name in sorted(known - slots)]
        raise Mismatch(f"Strip's slots differ ({' '.join(change)})")
    if not all(inspect.ismemberdescriptor(Strip.__dict__.get(name)) for name in CACHES):
        raise Mismatch("Strip's cache slots are not plain slots")
    signature = inspect.signature(Strip.__init__)
    if [(p.name, p.default) for p in signature.parameters.values()] != _PARAMETERS:
        raise Mismatch(f"Strip.__init__{signature}")
    sizes = [getattr(Strip([]), name)._maxsize for name in CACHES]
    if not all(isinstance(size, int) for size in sizes):
        raise Mismatch("Strip's caches have no integer _maxsize")


def apply() -> None:
    """Make Strip's caches on first use from now on."""
    sizes = {name: getattr(Strip([]), name)._maxsize for name in CACHES}  # Textual's own
    for name in CACHES:
        setattr(Strip, name, _MadeOnFirstUse(Strip.__dict__[name], sizes[name]))
    Strip.__init__ = _init  # type: ignore[method-assign]
