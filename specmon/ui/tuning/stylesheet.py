"""A stylesheet that keeps each theme's parsed CSS, parses the themes ahead of their `t`, and
restyles the whole app in one pass.

A theme is a set of CSS variables, and Textual's stylesheet forgets all it parsed whenever the
variables change (`set_variables` empties its caches; `reparse` parses every source again in a
fresh stylesheet): each `t` parsed the whole CSS (~12 ms on a 2-core machine) and every style
string the widgets draw with again (~3 ms of the repaint). Here those caches are kept per set of
variables, so a theme seen before parses nothing, and `parse_ahead` fills a theme's before its
first `t` (the dashboard does so for every theme after its first frame, and again, for the new
sources alone, whenever `sources_changed` says a screen's first open brought some).
Textual's rule sets are not changed once parsed (`update` reads them into each node's styles).
This reaches into the parent's private state (`_parse_cache`, `_style_parse_cache`, the variable
tokens): `check` stands it down (Textual's own stylesheet then) where those differ, and
tests/ui/test_stylesheet.py fails if the cached rules ever style a node differently from
Textual's own parse.

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

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

from textual.app import App
from textual.cache import LRUCache
from textual.css.errors import StylesheetError
from textual.css.model import RuleSet
from textual.css.styles import Styles
from textual.css.stylesheet import Stylesheet
from textual.css.tokenizer import Token, TokenError
from textual.css.types import CSSLocation
from textual.dom import DOMNode
from textual.screen import Screen
from textual.style import Style
from textual.widget import Widget

from specmon.ui.tuning import Mismatch

_TOKENS = "_Stylesheet__variable_tokens"  # Textual's private, name-mangled attribute
RULES_KEPT = 256
"""Parsed sources kept per theme (the dashboard and all its screens have ~20)."""
STYLES_KEPT = 4096
"""Parsed style strings kept per theme (Textual's own size)."""
PRIVATE_NAMES = ("_parse_cache", "_style_parse_cache", "_variables", "_variable_tokens", _TOKENS)
"""Textual's Stylesheet's private state this keeps per theme."""
_REFRESH_PARAMETERS = ["self", "layout", "children", "parent", "repaint"]
"""Textual 8.2's `Styles.refresh`, which `_refresh_later` stands in for during `update`."""


def check() -> None:
    """Textual's Stylesheet keeps its caches and tokens in these fields; `Styles.refresh` and
    the overridden methods take what they took in Textual 8.2."""
    sheet = Stylesheet(variables={})
    missing = [
        name
        for name in ("_parse_cache", "_style_parse_cache", "_variables", _TOKENS)
        if not hasattr(sheet, name)
    ]
    if missing or not isinstance(Stylesheet.__dict__.get("_variable_tokens"), property):
        raise Mismatch(f"Stylesheet lacks {', '.join(missing) or '_variable_tokens'}")
    if not isinstance(sheet._parse_cache, LRUCache):
        raise Mismatch("Stylesheet's parse cache is no longer an LRUCache")
    if list(inspect.signature(Styles.refresh).parameters) != _REFRESH_PARAMETERS:
        raise Mismatch(f"Styles.refresh{inspect.signature(Styles.refresh)}")
    expected = {"add_source": ["self", "css", "read_from", "is_default_css", "tie_breaker",
                               "scope"],
                "set_variables": ["self", "variables"], "reparse": ["self"],
                "update": ["self", "root", "animate"]}  # fmt: skip
    for method, parameters in expected.items():
        if list(inspect.signature(getattr(Stylesheet, method)).parameters) != parameters:
            raise Mismatch(f"Stylesheet.{method} takes other parameters")


def apply() -> None:
    """Nothing global: the app's themes (`ui/theme_cycle.py`) make a `ThemeCachedStylesheet`
    when this is installed."""


@dataclass
class _Parsed:
    """What Textual's stylesheet parsed from one set of variables."""

    rules: LRUCache[tuple[object, ...], list[RuleSet]] = field(
        default_factory=lambda: LRUCache(RULES_KEPT)
    )
    styles: LRUCache[str, Style] = field(default_factory=lambda: LRUCache(STYLES_KEPT))
    tokens: dict[str, list[Token]] | None = None


def _key(variables: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(variables.items()))


class ThemeCachedStylesheet(Stylesheet):
    """Textual's stylesheet, keeping what it parsed for every theme seen or parsed ahead."""

    def __init__(self, *, variables: dict[str, str] | None = None) -> None:
        """As Textual's; nothing parsed yet."""
        super().__init__(variables=variables)
        self._themes: dict[tuple[tuple[str, str], ...], _Parsed] = {}
        self._use(self._parsed(self._variables))
        self.sources_changed: Callable[[], None] | None = None
        """Called when a source is added or changed (a screen's first open; Textual ranks the
        widgets' default CSS again as new widget classes join): the themes parsed ahead lack it."""

    def add_source(
        self,
        css: str,
        read_from: CSSLocation | None = None,
        is_default_css: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> None:
        """Textual's; `sources_changed` hears of a new or changed source."""
        before = len(self.source), self.source.get(read_from) if read_from else None
        super().add_source(css, read_from, is_default_css, tie_breaker, scope)
        after = len(self.source), self.source.get(read_from) if read_from else None
        if before != after and self.sources_changed is not None:
            self.sources_changed()

    def set_variables(self, variables: dict[str, str]) -> None:
        """Textual's, keeping what was parsed with the old variables for their return."""
        # super() empties these two: give it spares, not the kept ones.
        self._parse_cache, self._style_parse_cache = LRUCache(1), LRUCache(1)
        super().set_variables(variables)
        self._use(self._parsed(variables))

    def reparse(self) -> None:
        """Textual's reparse, each source's rules parsed once per set of variables.

        Textual parses in a fresh stylesheet so that an error leaves this one as it was; its
        own `parse` does too (the rules are set at the end), and `set_variables` has emptied
        the set of sources known to be invalid, as the fresh stylesheet's is.
        """
        self.parse()

    def has_parsed(self, variables: dict[str, str]) -> bool:
        """Whether every current source was parsed with these variables."""
        parsed = self._themes.get(_key(variables))
        return parsed is not None and all(
            (css, read_from, defaults, tie_breaker, scope) in parsed.rules
            for read_from, (css, defaults, tie_breaker, scope) in self.source.items()
        )

    def parse_ahead(self, variables: dict[str, str]) -> None:
        """Parse every current source with these variables (another theme's), for later.

        CSS these variables do not parse is left for the theme's own `t` to report, as Textual
        would.
        """
        parsed = self._parsed(variables)
        sheet = Stylesheet(variables=variables)
        sheet._parse_cache = parsed.rules
        for read_from, (css, defaults, tie_breaker, scope) in self.source.items():
            sheet.add_source(
                css,
                read_from=read_from,
                is_default_css=defaults,
                tie_breaker=tie_breaker,
                scope=scope,
            )
        try:
            sheet.parse()
        except (StylesheetError, TokenError):
            return
        parsed.tokens = sheet._variable_tokens

    def _parsed(self, variables: dict[str, str]) -> _Parsed:
        return self._themes.setdefault(_key(variables), _Parsed())

    def _use(self, parsed: _Parsed) -> None:
        self._parse_cache = parsed.rules
        self._style_parse_cache = parsed.styles
        if parsed.tokens is None:
            parsed.tokens = self._variable_tokens
        setattr(self, _TOKENS, parsed.tokens)

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
