"""Theme files: every shipped one validates; bad ones are refused with the file and key named."""

from __future__ import annotations

import pytest
from textual.color import Color

from specmon.ui.theming import APP_VARIABLES, ThemeError, load_themes, parse_theme, themes_dir


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
