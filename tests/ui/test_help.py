"""The `?` screen lists every key the dashboard and its comparison screen bind, and `t`'s themes
in the order `t` goes through them (the README's key table too)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll

from specmon.ui.app import SpecmonApp
from specmon.ui.fleet_app import DASHBOARD_ACTIONS, FleetApp
from specmon.ui.screens.comparison import ComparisonScreen
from specmon.ui.screens.fleet import FleetScreen
from specmon.ui.screens.help import COMPARISON_KEYS, FLEET_KEYS, KEYS

README = Path(__file__).resolve().parents[2] / "README.md"
# How the help writes them.
SHOWN = {"question_mark": "?", "escape": "Esc", "enter": "Enter", "slash": "/", "f1": "F1",
         "f10": "F10", "ctrl+c": "Ctrl-C"}  # fmt: skip


def _keys(bindings: list[BindingType]) -> set[str]:
    keys = set()
    for binding in bindings:
        assert isinstance(binding, Binding)
        keys.update(SHOWN.get(key, key) for key in binding.key.split(","))
    return keys


THEME = re.compile(r"specmon-[a-z-]+[a-z]|textual-[a-z]+|nord|gruvbox")


def _readme_row(key: str) -> str:
    """The row of the README's key table whose first cell names `key`."""
    text = README.read_text(encoding="utf-8")
    return next(line for line in text.splitlines() if line.startswith(f"| `{key}` |"))


@pytest.mark.parametrize(
    ("bindings", "table"),
    [(SpecmonApp.BINDINGS, KEYS), (ComparisonScreen.BINDINGS, COMPARISON_KEYS)],
    ids=["dashboard", "comparison"],
)
def test_help_lists_every_binding(
    bindings: list[BindingType], table: tuple[tuple[str, str], ...]
) -> None:
    listed = {key.strip() for keys, _ in table for key in keys.split(",")}
    assert _keys(bindings) <= listed


async def test_theme_order_is_what_t_does(make_app: Callable[..., SpecmonApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        order = [app.theme]
        while True:
            await pilot.press("t")
            # Said in the events log, drawn by the theme's own repaint (no toast after it).
            assert app.session.live.events[-1].text == f"theme: {app.theme}"
            assert f"theme: {app.theme}" in str(app.query_one("#events").render())
            if app.theme == order[0]:
                break
            order.append(app.theme)
    help_row = next(does for key, does in KEYS if key == "t")
    assert THEME.findall(help_row) == order
    assert THEME.findall(_readme_row("t")) == order


async def test_help_opens_again_at_the_keys(make_app: Callable[..., SpecmonApp]) -> None:
    """Scrolled down, closed, opened again: at the top in the first frame (scrolled back while
    it was closed, not after it showed)."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        scroll = app.screen.query_one("#help", VerticalScroll)
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 0
        await pilot.press("escape")
        assert scroll.scroll_y == 0  # before the help shows again
        await pilot.press("question_mark")
        assert app.screen.query_one("#help", VerticalScroll).scroll_y == 0


def test_the_fleet_tables_help_lists_its_own_keys() -> None:
    """Issue 25: the fleet's `?` listed b, s, c, p, i (which do nothing on the table) and not
    ↑↓, Enter or Esc. It lists what works there, and no key the table refuses."""
    listed = {key.strip() for keys, _ in FLEET_KEYS for key in keys.split(",")}
    table = _keys(FleetScreen.BINDINGS) | {"↑", "↓"}  # the DataTable's cursor keys
    working = _keys(
        [
            b
            for b in FleetApp.BINDINGS
            if isinstance(b, Binding) and b.action not in DASHBOARD_ACTIONS
        ]
    )
    assert listed == {"Esc"} | table | working
    refused = _keys(
        [b for b in FleetApp.BINDINGS if isinstance(b, Binding) and b.action in DASHBOARD_ACTIONS]
    )
    assert not (refused - {"Esc"}) & listed  # Esc: in a server's dashboard, said so
    assert "dashboard" in dict(FLEET_KEYS)["Esc"]
