"""Textual keeps the render cache of up to 1,024 widgets after they are gone; this lets go of it.

`StylesCache.get_inner_outer` (Textual 8) is an `lru_cache` on a method: each key holds the
StylesCache it was called on, and with it every line that widget drew. A screen opened and closed
(`c`, `i`, `s` …) leaves its widgets' caches there: 2,500 objects for each `c` at 160x50, which
every full collection then walks (48,000 tracked objects grew to 170,000 in two minutes of keys,
and a full collection from 16 ms to 140 ms). Textualize/textual#6665, open as of Textual 8.2.
Emptying the cache costs the live widgets one recomputed pair of background styles each.
"""

from __future__ import annotations

from textual._styles_cache import StylesCache


def release_render_caches() -> None:
    """Let go of the render caches Textual's `get_inner_outer` cache still holds."""
    StylesCache.get_inner_outer.cache_clear()
