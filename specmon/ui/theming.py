"""Themes as data: `themes/*.toml` (shipped in the wheel) validated into Textual themes."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import BUILTIN_THEMES, Theme

from specmon.nesting import TooDeep, loads_toml

# App colours, as theme variables. A theme may set them in [variables]; otherwise they follow
# the theme's own semantic colours, so Textual's built-in themes work too.
APP_VARIABLES = {"good": "success", "bad": "error", "stale": "warning", "baseline": "accent"}
_COLOR_KEYS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground",
               "background", "surface", "panel", "boost")  # fmt: skip


class ThemeError(ValueError):
    """A theme file that cannot be used; the message names the file and the key."""


def themes_dir() -> Traversable:
    """Where the shipped theme files are (in the wheel, or the checkout's `themes/`)."""
    packaged = resources.files("specmon").joinpath("themes")
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "themes"


def parse_theme(name: str, text: str) -> Theme:
    """Validate one theme file's text into a Theme.

    Raises:
        ThemeError: Not TOML, a missing `primary`, an unknown key, or a colour that does not parse.
    """
    try:
        data: dict[str, Any] = loads_toml(text)
    except (tomllib.TOMLDecodeError, TooDeep) as exc:
        raise ThemeError(f"{name}: not valid TOML ({exc})") from None
    unknown = set(data) - {"name", "dark", "variables", *_COLOR_KEYS}
    if unknown:
        raise ThemeError(f"{name}: unknown key(s) {', '.join(sorted(unknown))}")
    if "primary" not in data:
        raise ThemeError(f"{name}: `primary` is required")
    colors = {}
    for key in _COLOR_KEYS:
        if key in data:
            colors[key] = _color(name, key, data[key])
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ThemeError(f"{name}: [variables] must be a table")
    for key, value in variables.items():
        if key in APP_VARIABLES:
            _color(name, f"variables.{key}", value)
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{name}: `dark` must be true or false")
    return Theme(
        name=str(data.get("name", name)),
        primary=colors["primary"],
        secondary=colors.get("secondary"),
        warning=colors.get("warning"),
        error=colors.get("error"),
        success=colors.get("success"),
        accent=colors.get("accent"),
        foreground=colors.get("foreground"),
        background=colors.get("background"),
        surface=colors.get("surface"),
        panel=colors.get("panel"),
        boost=colors.get("boost"),
        dark=dark,
        variables={k: str(v) for k, v in variables.items()},
    )


def css_variables(theme: Theme, defaults: Mapping[str, str]) -> dict[str, str]:
    """A theme's CSS variables as Textual's `App.get_css_variables` makes them (the theme's colour
    system and its own variables over the app's `defaults`), with the app colours."""
    variables = {**defaults, **theme.to_color_system().generate(), **theme.variables}
    for name, base in APP_VARIABLES.items():
        variables.setdefault(name, variables[base])
    return variables


def _color(name: str, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ThemeError(f"{name}: `{key}` must be a colour string")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(f"{name}: `{key}` = {value!r} is not a colour") from None
    return value


def load_themes() -> list[Theme]:
    """Every shipped theme, sorted by name."""
    folder = themes_dir()
    return [
        parse_theme(entry.name, entry.read_text(encoding="utf-8"))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".toml")
    ]


def theme_names() -> list[str]:
    """Every theme the dashboard can show (`--theme`, `t`): the shipped ones, then Textual's."""
    return [theme.name for theme in load_themes()] + list(BUILTIN_THEMES)
