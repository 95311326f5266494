"""The dashboard's themes: those `t` goes through, each one's CSS variables, and each one's CSS
parsed ahead of its `t`.

The shipped themes (`theming.load_themes`) are registered before the stylesheet is first
parsed: on mount it would be parsed and applied again (~40 ms of the first frame). Where the
stylesheet tuning is installed (`tuning.stylesheet`), the app's stylesheet keeps each theme's
parse, and every theme's is parsed here ahead of its `t`: after the first frame, one theme a
tick, and again for the sources a screen's first open brings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.theme import Theme

from specmon.ui import tuning
from specmon.ui.theming import css_variables, load_themes
from specmon.ui.tuning.gc_deferral import freeze_long_lived
from specmon.ui.tuning.stylesheet import ThemeCachedStylesheet

THEME_AHEAD_EVERY_S = 0.1  # after the first frame, one theme's CSS parsed ahead a tick
TEXTUAL_THEMES = ("textual-dark", "textual-light", "nord", "gruvbox")
"""Textual's themes `t` goes through, after the shipped ones."""


class ThemeCycle:
    """The app's themes in `t`'s order, their CSS variables, and their CSS parsed ahead."""

    def __init__(self, app: App[Any], busy: Callable[[], bool]) -> None:
        """Nothing registered yet: made before Textual's `App.__init__`, which asks for the
        current theme's variables (`variables`).

        Args:
            app: The dashboard whose themes these are.
            busy: Whether a bench streams now: no theme is parsed ahead meanwhile.
        """
        self.app = app
        self.busy = busy
        self.names: list[str] = []
        """Every theme `t` goes through, registered or not (`cycle`)."""
        self.css: ThemeCachedStylesheet | None = None
        """Installed (`tuning.stylesheet`): the stylesheet that keeps each theme's parse."""
        self.parsing_ahead = False
        """Whether a theme's CSS is yet to be parsed ahead, a tick from now."""
        self.tried_ahead: set[str] = set()
        """The themes parsed ahead for the current sources (or tried, where one did not parse)."""
        self.kept_variables: dict[str, tuple[Theme, dict[str, str]]] = {}
        """Each theme's CSS variables, with the theme they were made from."""

    def register(self) -> None:
        """Register the shipped themes with the app, and its stylesheet where it is tuned (the
        app's `__init__`, after Textual's)."""
        app = self.app
        if tuning.active("stylesheet"):
            self.css = ThemeCachedStylesheet(variables=app.get_css_variables())
            app.stylesheet = self.css
        for theme in load_themes():
            app.register_theme(theme)
            self.names.append(theme.name)
        self.names += TEXTUAL_THEMES

    def cycle(self) -> list[str]:
        """The themes `t` goes through, in order."""
        return [n for n in self.names if n in self.app.available_themes]

    def after(self, name: str) -> str:
        """The theme `t` goes to from `name`."""
        names = self.cycle()
        current = names.index(name) if name in names else -1
        return names[(current + 1) % len(names)]

    def variables(self, theme: Theme) -> dict[str, str]:
        """A theme's CSS variables (`theming.css_variables`), made once (again if a theme of
        that name is registered anew)."""
        kept = self.kept_variables.get(theme.name)
        if kept is None or kept[0] is not theme:
            kept = (theme, css_variables(theme, self.app.get_theme_variable_defaults()))
            self.kept_variables[theme.name] = kept
        return kept[1]

    def start(self) -> None:
        """After the first frame, parse every theme's CSS ahead; again whenever a screen brings
        new CSS (on mount)."""
        self.app.call_after_refresh(self.parse_ahead, True)
        if self.css is not None:
            self.css.sources_changed = self.sources_changed

    def sources_changed(self) -> None:
        """A screen brought new CSS: parse it for the other themes too, once it is drawn."""
        self.tried_ahead.clear()
        if not self.parsing_ahead:
            self.parsing_ahead = True
            self.app.call_after_refresh(self.parse_ahead)

    def parse_ahead(self, first: bool = False) -> None:
        """Parse every theme's CSS (what it lacks) before its next `t` (~12 ms a theme at
        first), one theme a tick from the next `t`'s on, until none lacks any; the `first`
        time, then freeze what was parsed with the other long-lived objects."""
        if self.css is None:  # Textual's own stylesheet parses a theme at its `t`
            if first:
                freeze_long_lived()
            return
        css, app = self.css, self.app
        self.parsing_ahead = True
        names = self.cycle()
        start = names.index(app.theme) + 1 if app.theme in names else 0
        order = names[start:] + names[:start]

        def next_theme() -> None:
            # Sources that joined meanwhile are lacking in the themes done before them; a theme
            # whose CSS does not parse is tried once for these sources, and left to its `t`.
            tried, themes = self.tried_ahead, app.available_themes
            lacking = [
                name
                for name in order
                if name not in tried and not css.has_parsed(self.variables(themes[name]))
            ]
            if lacking and self.busy():
                # Not while a bench streams: a tick holds the event loop ~10 ms, and a fast
                # server's stream read late arrives all at once (refused as buffered).
                app.set_timer(THEME_AHEAD_EVERY_S, next_theme)
                return
            if lacking:
                tried.add(lacking[0])
                css.parse_ahead(self.variables(themes[lacking[0]]))
                app.set_timer(THEME_AHEAD_EVERY_S, next_theme)
                return
            self.parsing_ahead = False
            if first:  # later, closed screens' widgets are about: they must not be frozen
                freeze_long_lived()

        next_theme()
