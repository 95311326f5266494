"""The Textual dashboard: the only package that imports Textual or Rich (docs/design.md §2).

Importing it changes nothing in Textual: `specmon.ui.tuning.install` does, at the app's start.
It does refuse a Textual older than the one the dashboard is written for (`OLDEST_TEXTUAL`):
Textual 6.12, forced in beside specmon, drew nothing and spun at 100% CPU, deaf to SIGTERM.
"""

from __future__ import annotations

from specmon.errors import SpecmonError

OLDEST_TEXTUAL = (8, 2)
"""The oldest Textual release (major, minor) the dashboard runs on: pyproject.toml pins 8.2.8.
A newer one runs with every tuning stood down (`tuning.install`)."""


class UnsupportedTextual(SpecmonError):
    """The Textual installed is older than the dashboard was written for."""


def textual_version() -> str | None:
    """The installed Textual's version; None where there is none (the tunings that need only
    the standard library, such as `tuning.gc_deferral`, run on such a Python)."""
    try:
        import textual
    except ImportError:
        return None
    return str(textual.__version__)


def textual_release(version: str) -> tuple[int, int]:
    """A Textual version's (major, minor); (0, 0) for one that does not read so."""
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (0, 0)


def check_textual(version: str) -> None:
    """Raise `UnsupportedTextual` for a Textual older than `OLDEST_TEXTUAL`."""
    if textual_release(version) < OLDEST_TEXTUAL:
        oldest = ".".join(map(str, OLDEST_TEXTUAL))
        raise UnsupportedTextual(
            f"the dashboard needs Textual {oldest} or newer, and this Python has Textual "
            f"{version}: pip install 'textual=={_pinned()}'"
        )


def _pinned() -> str:
    from specmon.ui.tuning import CHECKED_AGAINST  # the release pyproject.toml pins

    return CHECKED_AGAINST


_installed = textual_version()
if _installed is not None:
    check_textual(_installed)
