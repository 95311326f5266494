"""`t` parses each theme's CSS once and restyles in one pass (ui/stylesheet.py); the styles come
out as a fresh parse's and the screen as Textual's own restyle draws it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.css.stylesheet import Stylesheet

from specmon.ui.app import SpecmonApp
from specmon.ui.stylesheet import ThemeCachedStylesheet


def _styles(app: SpecmonApp) -> str:
    """Every node's resolved colours and borders, as text."""
    return "\n".join(
        f"{node.id} {node.styles.background} {node.styles.color} {node.styles.border}"
        for node in app.screen.walk_children(with_self=True)
    )


async def test_a_theme_seen_before_is_not_parsed_again(
    make_app: Callable[..., SpecmonApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    parses = 0
    parse = Stylesheet._parse_rules

    def counting(self: Stylesheet, *args: Any, **kwargs: Any) -> Any:
        nonlocal parses
        parses += 1
        return parse(self, *args, **kwargs)

    monkeypatch.setattr(Stylesheet, "_parse_rules", counting)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        themes = len([n for n in app._theme_names if n in app.available_themes])
        rounds: list[list[tuple[str, str]]] = []
        parsed = []
        for _ in range(2):
            before = parses
            rounds.append([])
            for _ in range(themes):
                await pilot.press("t")
                rounds[-1].append((app.theme, _styles(app)))
            parsed.append(parses - before)
    assert parsed[0] > 0 and parsed[1] == 0
    assert rounds[0] == rounds[1]
    assert len({styles for _, styles in rounds[0]}) == themes  # each theme styles differently


async def test_a_theme_restyled_in_one_pass_draws_what_textual_draws(
    make_app: Callable[..., SpecmonApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every theme after `t`, screen by screen, against Textual's own restyle of each node."""

    async def cycle() -> list[str]:
        app = make_app()
        shots = []
        async with app.run_test(size=(120, 36)) as pilot:
            themes = len([n for n in app._theme_names if n in app.available_themes])
            for _ in range(themes):
                await pilot.press("t")
                await pilot.pause()
                shots.append(app.export_screenshot())
        return shots

    ours = await cycle()
    monkeypatch.setattr(ThemeCachedStylesheet, "update", Stylesheet.update)
    assert ours == await cycle()
