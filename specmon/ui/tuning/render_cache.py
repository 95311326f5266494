"""Textual keeps the render cache of up to 1,024 widgets after they are gone; this lets go of it.

`StylesCache.get_inner_outer` (Textual 8) is an `lru_cache` on a method: each key holds the
StylesCache it was called on, and with it every line that widget drew. A screen opened and closed
(`c`, `i`, `s` …) leaves its widgets' caches there: 2,500 objects for each `c` at 160x50, which
every full collection then walks (48,000 tracked objects grew to 170,000 in two minutes of keys,
and a full collection from 16 ms to 140 ms). Textualize/textual#6665, open as of Textual 8.2.
Emptying the cache costs the live widgets one recomputed pair of background styles each.
Should Textual make it a plain method, `check` stands this down (it crashed the dashboard
mid-session before it was checked).
"""

from __future__ import annotations

from specmon.ui.tuning import Mismatch, active

PRIVATE_NAMES = ("textual._styles_cache",)


def check() -> None:
    """`get_inner_outer` is still an lru_cache (it has `cache_clear`)."""
    from textual._styles_cache import StylesCache

    if not callable(getattr(StylesCache.get_inner_outer, "cache_clear", None)):
        raise Mismatch("StylesCache.get_inner_outer has no cache_clear")


def apply() -> None:
    """Nothing changes until `release_render_caches` is called."""


def release_render_caches() -> None:
    """Let go of the render caches Textual's `get_inner_outer` cache still holds (installed)."""
    if active("render_cache"):
        from textual._styles_cache import StylesCache

        StylesCache.get_inner_outer.cache_clear()
