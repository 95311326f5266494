"""`t` parses each theme's CSS once, ahead of its first visit, and restyles in one pass
(ui/tuning/stylesheet.py); the styles and the screen come out as Textual's own parse and restyle
make them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.css import stylesheet as stylesheet_module
from textual.css.parse import parse
from textual.css.stylesheet import Stylesheet
from textual.pilot import Pilot
from tuned import needs

from specmon.session.view import BenchView
from specmon.ui.app import SpecmonApp
from specmon.ui.theme_cycle import ThemeCycle
from specmon.ui.theming import css_variables
from specmon.ui.tuning.stylesheet import ThemeCachedStylesheet

pytestmark = needs("stylesheet")


def _styles(app: SpecmonApp) -> str:
    """Every node's resolved colours and borders, as text."""
    return "\n".join(
        f"{node.id} {node.styles.background} {node.styles.color} {node.styles.border}"
        for node in app.screen.walk_children(with_self=True)
    )


async def _parsed_ahead(app: SpecmonApp, pilot: Pilot[None]) -> None:
    """Wait until the dashboard has parsed every theme ahead (after its first frame)."""
    defaults = app.get_theme_variable_defaults()
    for _ in range(200):
        if all(
            app.themes.css.has_parsed(css_variables(app.available_themes[name], defaults))
            for name in app.themes.cycle()
        ):
            return
        await pilot.pause(0.02)
    raise AssertionError("the themes were not parsed ahead within 4 s")


async def test_every_theme_is_parsed_ahead_and_never_again(
    make_app: Callable[..., SpecmonApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    parses: list[str] = []

    def counting(scope: str, css: str, *args: Any, **kwargs: Any) -> Any:
        parses.append(css)
        return parse(scope, css, *args, **kwargs)

    monkeypatch.setattr(stylesheet_module, "parse", counting)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _parsed_ahead(app, pilot)
        themes, sources = len(app.themes.cycle()), set(app.stylesheet.source.items())
        ahead = len(parses)  # every source with every theme (has_parsed), and nothing since
        styled = set()
        for _ in range(2 * themes):
            await pilot.press("t")
            styled.add((app.theme, _styles(app)))
        assert len(parses) == ahead
        assert len(styled) == themes  # each theme styles differently, and the same each time
        # A screen's CSS joins on its first open (and Textual ranks some widgets' default CSS
        # again): those sources alone, once for each theme, parsed ahead too.
        await pilot.press("c", "escape")
        await _parsed_ahead(app, pilot)
        joined = len(set(app.stylesheet.source.items()) - sources)
        assert joined > 0 and len(parses) == ahead + joined * themes
        for _ in range(2 * themes):
            await pilot.press("t")
        assert len(parses) == ahead + joined * themes


async def test_every_theme_draws_what_textuals_own_parse_and_restyle_draw(
    make_app: Callable[..., SpecmonApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every theme after `t`, screen by screen and node by node, against Textual's own
    stylesheet: every source parsed again at each `t`, each node restyled rule by rule."""

    async def cycle() -> list[tuple[str, str]]:
        app = make_app()
        seen = []
        async with app.run_test(size=(120, 36)) as pilot:
            for _ in range(len(app.themes.cycle()) + 1):  # the first theme again, from cache
                await pilot.press("t")
                await pilot.pause()
                seen.append((app.export_screenshot(), _styles(app)))
        return seen

    ours = await cycle()
    for name in ("set_variables", "reparse", "update"):
        monkeypatch.setattr(ThemeCachedStylesheet, name, getattr(Stylesheet, name))
    monkeypatch.setattr(ThemeCycle, "parse_ahead", lambda *_: None)
    assert ours == await cycle()


async def test_a_theme_that_does_not_parse_is_tried_once_and_left_to_its_t(
    make_app: Callable[..., SpecmonApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    tried: list[tuple[tuple[str, str], ...]] = []

    def failing(self: ThemeCachedStylesheet, variables: dict[str, str]) -> None:
        tried.append(tuple(sorted(variables.items())))  # as if it did not parse: nothing kept

    monkeypatch.setattr(ThemeCachedStylesheet, "parse_ahead", failing)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            if not app.themes.parsing_ahead and tried:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.3)  # no tick left to try again
        assert not app.themes.parsing_ahead
        assert len(tried) == len(set(tried)) == len(app.themes.cycle()) - 1


async def test_no_theme_is_parsed_ahead_while_a_bench_streams(
    make_app: Callable[..., SpecmonApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[dict[str, str]] = []
    monkeypatch.setattr(ThemeCachedStylesheet, "parse_ahead", lambda _, v: parsed.append(v))
    app = make_app()
    app.session.live.bench = BenchView("baseline", 0, 3, None)  # a bench from the start
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        assert parsed == [] and app.themes.parsing_ahead  # waiting, not done
        app.session.live.bench = None
        for _ in range(100):
            if not app.themes.parsing_ahead:
                break
            await pilot.pause(0.05)
        assert len(parsed) == len(app.themes.cycle()) - 1
