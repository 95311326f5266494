"""Theme files: every shipped one validates; bad ones are refused with the file and key named."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.app import App
from textual.color import Color

from specmon.ui.app import SpecmonApp
from specmon.ui.theming import (
    APP_VARIABLES,
    ThemeError,
    css_variables,
    load_themes,
    parse_theme,
    themes_dir,
)


def test_every_shipped_theme_loads_and_parses() -> None:
    themes = load_themes()
    assert {t.name for t in themes} == {"specmon-dark", "specmon-light", "specmon-high-contrast"}
    for theme in themes:
        for value in (theme.primary, theme.background, theme.foreground):
            assert value is not None
            Color.parse(value)
        assert set(APP_VARIABLES) <= set(theme.variables)
        for name in APP_VARIABLES:
            Color.parse(theme.variables[name])
    assert any(entry.name == "dark.toml" for entry in themes_dir().iterdir())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("primary = ", "not valid TOML"),
        ("a = " + "[" * 2000 + "]" * 2000, "not valid TOML .nested more than 64"),
        ('secondary = "#fff"', "`primary` is required"),
        ('primary = "#fff"\nprimry = "#000"', "unknown key"),
        ('primary = "not-a-colour"', "is not a colour"),
        ('primary = "#fff"\n[variables]\ngood = "nope"', "variables.good"),
        ('primary = "#fff"\ndark = "yes"', "`dark` must be true or false"),
    ],
)
def test_bad_theme_files_are_refused(text: str, message: str) -> None:
    with pytest.raises(ThemeError, match=message):
        parse_theme("mine.toml", text)


async def test_each_themes_variables_are_textuals_own_with_the_app_colours(
    make_app: Callable[..., SpecmonApp],
) -> None:
    # `css_variables` builds any theme's variables (to parse them ahead); for the current theme
    # they must be what Textual's own `App.get_css_variables` gives, plus the app colours.
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for name in app.themes.cycle():
            app.theme = name
            await pilot.pause()
            assert app.current_theme is App.current_theme.fget(app)  # type: ignore[attr-defined]
            textual = App.get_css_variables(app)
            ours = css_variables(app.available_themes[name], app.get_theme_variable_defaults())
            assert ours == {**{n: textual[b] for n, b in APP_VARIABLES.items()}, **textual}
            assert ours == app.get_css_variables()
