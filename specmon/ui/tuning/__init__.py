"""Every change specmon makes to a dependency's internals, in one place, installed at start.

Each tuning here makes the dashboard faster or leaner by reaching into Textual's private state
(or the interpreter's heap): checked against Textual `CHECKED_AGAINST` (pinned in
pyproject.toml for that reason). A Textual release may rename or reshape what one reaches into,
so `install` checks each against the Textual it runs on first (the names exist, the slots, the
signatures) and applies only those that fit; one that does not stands down, leaving Textual's
own behaviour, with one line for the events log. `SPECMON_STOCK_TEXTUAL=1` runs without any.
Importing this package (or any of `specmon.ui`) changes nothing: only `install` does.

Each tuning is a module of this package with `check()` (raises `Mismatch`, ImportError or
AttributeError where what it reaches into differs), `apply()` and `PRIVATE_NAMES` (every private
name of a dependency it touches; tests/ui/test_tuning.py fails on one unlisted). What is
installed stays for the process: Strips made by the tuned constructor outlive any app.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from types import ModuleType

from specmon.ui import textual_version

CHECKED_AGAINST = "8.2.8"
"""The Textual release every tuning was checked against (pyproject.toml pins it)."""
STOCK_ENV = "SPECMON_STOCK_TEXTUAL"
"""Set to 1: no tuning at all, Textual as released."""

TUNINGS = (
    "escape_delay",
    "strip_caches",
    "render_cache",
    "driver",
    "stylesheet",
    "app_state",
    "gc_deferral",
    "malloc_trim",
)
"""Each tuning's module, in the order they are installed."""

_active: set[str] = set()
_notes: list[str] | None = None


class Mismatch(Exception):
    """What a tuning reaches into differs from the Textual it was written for."""


def tuning_module(name: str) -> ModuleType:
    """A tuning's module (imported on first use: it may import Textual's private modules)."""
    return importlib.import_module(f"{__name__}.{name}")


def install(environ: Mapping[str, str] = os.environ) -> list[str]:
    """Apply every tuning that fits the Textual this runs on, once a process; the lines for the
    events log (one for each tuning that stood down)."""
    global _notes
    if _notes is None:
        _notes = _install(environ, textual_version())
    return list(_notes)


def _install(environ: Mapping[str, str], version: str | None) -> list[str]:
    if environ.get(STOCK_ENV, "") not in ("", "0"):
        return [f"stock Textual ({STOCK_ENV}={environ[STOCK_ENV]}): no tuning installed"]
    if version is not None and version != CHECKED_AGAINST:
        # A check of names and signatures cannot see a private field whose meaning changed:
        # outside the release they were written for, every tuning stands down.
        return [f"Textual {version}, not {CHECKED_AGAINST}: no tuning installed"]
    # No Textual at all (a bare interpreter): the check of each tuning that needs it fails.
    notes = []
    for name in TUNINGS:
        try:
            module = tuning_module(name)
            module.check()
        except (Mismatch, ImportError, AttributeError, TypeError, ValueError) as exc:
            notes.append(f"tuning {name!r} stood down: {_reason(exc)}")
            continue
        module.apply()
        _active.add(name)
    return notes


def active(name: str) -> bool:
    """Whether this tuning is installed now."""
    return name in _active


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, Mismatch) else f"{type(exc).__name__}: {text}"
