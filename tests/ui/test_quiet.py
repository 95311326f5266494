"""The quiet setters (ui/widgets/quiet.py): the screen is laid out again only when a widget's
size can follow what it shows."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from specmon.ui.widgets import quiet


class _Two(App[None]):
    CSS = "#fixed { height: 3; } #auto { height: auto; } #wide { width: auto; height: 1; }"

    def compose(self) -> ComposeResult:
        yield Static("-", id="fixed")
        yield Static("-", id="auto")
        yield Static("--", id="wide")


async def test_new_content_lays_the_screen_out_only_for_a_size_that_follows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    layouts = 0
    refresh_layout = Screen._refresh_layout

    def counting(self: Screen[object], *args: object, **kwargs: object) -> None:
        nonlocal layouts
        layouts += 1
        refresh_layout(self, *args, **kwargs)  # type: ignore[arg-type]

    app = _Two()
    async with app.run_test(size=(40, 12)) as pilot:
        fixed, auto = app.query_one("#fixed", Static), app.query_one("#auto", Static)
        await pilot.pause()  # the first layout done
        monkeypatch.setattr(Screen, "_refresh_layout", counting)
        quiet.show(fixed, "one\ntwo\nthree\nfour")
        await pilot.pause()
        assert layouts == 0 and fixed.size.height == 3
        assert "three" in app.export_screenshot() and "four" not in app.export_screenshot()
        quiet.show(auto, "1\n2\n3\n4")
        await pilot.pause()
        assert layouts >= 1 and auto.size.height == 4
        layouts = 0
        quiet.show(auto, "5\n6\n7\n8")  # another text of the same height: no layout
        await pilot.pause()
        assert layouts == 0 and auto.size.height == 4 and "8" in app.export_screenshot()
        wide = app.query_one("#wide", Static)
        quiet.show(wide, "ab")  # as wide as before
        await pilot.pause()
        assert layouts == 0 and wide.size.width == 2
        quiet.show(wide, "abcd")
        await pilot.pause()
        assert layouts >= 1 and wide.size.width == 4
