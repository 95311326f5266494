"""A stylesheet that parses the CSS once per theme and restyles the whole app in one pass.

A theme is a set of CSS variables, and Textual's `Stylesheet.reparse` parses every source again
whenever the variables change (its parse cache is emptied with them): ~10 ms of each `t` on a
2-core machine. Here the parsed rules are kept per (variables, sources), so each theme's CSS is
parsed once per session; the entries are at most the themes times the sets of sources (a
screen's CSS joins the sources on its first open). Textual's rule sets are not changed once
parsed (`update` reads them into each node's styles). This reaches into the parent's private
state (`_variables`, `_rules`, `_rules_map`, `_require_parse`): Textual is pinned below 9, and
tests/ui/test_stylesheet.py fails if the cached rules ever style a node differently.

Restyling: Textual sets each node's rules one property at a time, and each changed colour
refreshes the node and every node below it. A theme changes ~9 colours a node, so one `t` made
~580 widget refreshes for the dashboard's 19 nodes at 160x50 (each measures the widget again):
~17 ms. When the whole app is restyled (`update` from the App: a theme, new CSS), Textual sets
the rules with those refreshes turned off (`Styles.refresh`, for the update's synchronous
extent), then every widget is refreshed once and every screen laid out again, which is what
those refreshes together ask for. A node's own restyle (a class, focus, hover) stays Textual's.
specmon's CSS and Textual's have no transitions, so nothing is animated either way; the test
compares the screen after each `t` with what Textual's own restyle draws.
"""

from __future__ import annotations

from textual.app import App
from textual.css.model import RuleSet
from textual.css.styles import Styles
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget


class ThemeCachedStylesheet(Stylesheet):
    """Textual's stylesheet, keeping the parsed rules of every theme seen."""

    def __init__(self, *, variables: dict[str, str] | None = None) -> None:
        """As Textual's; nothing parsed yet."""
        super().__init__(variables=variables)
        self._parsed: dict[tuple[object, ...], list[RuleSet]] = {}

    def reparse(self) -> None:
        """Textual's reparse, or the rules parsed before from the same variables and sources."""
        key = (tuple(sorted(self._variables.items())), tuple(self.source.items()))
        rules = self._parsed.get(key)
        if rules is None:
            super().reparse()
            self._parsed[key] = self.rules
            return
        self._rules = rules
        self._rules_map = None
        self._require_parse = False

    def update(self, root: DOMNode, animate: bool = False) -> None:
        """Textual's update; from the App, without the refreshes each changed rule makes, then
        one refresh a widget."""
        if not isinstance(root, App):
            super().update(root, animate=animate)
            return
        refresh = Styles.refresh
        Styles.refresh = _refresh_later  # type: ignore[method-assign]
        try:
            super().update(root, animate=False)
        finally:
            Styles.refresh = refresh  # type: ignore[method-assign]
        for node in root.walk_children():
            if isinstance(node, Screen):
                node.refresh(layout=True)
            elif isinstance(node, Widget):
                node.refresh()


def _refresh_later(
    self: Styles,
    *,
    layout: bool = False,
    children: bool = False,
    parent: bool = False,
    repaint: bool = True,
) -> None:
    """A rule set while the whole app is restyled: the widgets are refreshed after it."""
