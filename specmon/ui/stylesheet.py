"""A stylesheet that parses the CSS once per theme: `t` goes back to rules it has read before.

A theme is a set of CSS variables, and Textual's `Stylesheet.reparse` parses every source again
whenever the variables change (its parse cache is emptied with them): ~10 ms of each `t` on a
2-core machine. Here the parsed rules are kept per (variables, sources), so each theme's CSS is
parsed once per session; the entries are at most the themes times the sets of sources (a
screen's CSS joins the sources on its first open). Textual's rule sets are not changed once
parsed (`update` reads them into each node's styles). This reaches into the parent's private
state (`_variables`, `_rules`, `_rules_map`, `_require_parse`): Textual is pinned below 9, and
tests/ui/test_stylesheet.py fails if the cached rules ever style a node differently.
"""

from __future__ import annotations

from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet


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
