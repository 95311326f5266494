"""What the dashboard reads of Textual's App's private state.

`App.current_theme` copies every registered theme (`available_themes`) at each read, and it is
read for every line drawn: ~4% of a repaint. Installed, the dashboard looks the theme up in the
registry itself (`registered_theme`). And Textual keeps the first unhandled exception of a run
in `App._exception` (`unhandled_exception`), which the command reports in one line; and the
whole frame is drawn by the screen's compositor (`whole_frame`), which `d` dumps as text.
"""

from __future__ import annotations

import inspect
from typing import Any

from rich.console import RenderableType
from textual.app import App
from textual.theme import Theme

from specmon.ui.tuning import Mismatch, active

PRIVATE_NAMES = ("_registered_themes", "_exception", "_compositor", "_background_screens")


def check() -> None:
    """Textual's App keeps its themes by name in `_registered_themes`."""
    if "self._registered_themes: dict[str, Theme] = {}" not in inspect.getsource(App.__init__):
        raise Mismatch("App keeps no _registered_themes dict")


def apply() -> None:
    """Nothing global: `registered_theme` reads the registry from now on."""


def registered_theme(app: App[Any], name: str) -> Theme | None:
    """The theme registered by this name, without Textual's copy of them all; None when this
    tuning stood down (then Textual's `current_theme` answers)."""
    return app._registered_themes.get(name) if active("app_state") else None


def unhandled_exception(app: App[Any]) -> BaseException | None:
    """The first exception that ended the app's run (read whether or not tuning is installed:
    it changes nothing). Where a Textual release moves it, an error exit still says so."""
    if hasattr(app, "_exception"):
        exception: BaseException | None = app._exception
        return exception
    if app.return_code:
        return RuntimeError(f"the dashboard ended with return code {app.return_code}")
    return None


def whole_frame(app: App[Any]) -> RenderableType | None:
    """The frame on screen (the active screen over those it is drawn on), as Textual renders it
    for `App.export_screenshot`'s SVG; read whether or not tuning is installed (it changes
    nothing). None where a Textual release moved it: then `d` dumps the SVG alone."""
    screen = app.screen
    if not hasattr(screen, "_compositor") or not hasattr(app, "_background_screens"):
        return None
    frame: RenderableType | None = screen._compositor.render_update(
        full=True, screen_stack=app._background_screens
    )
    return frame
