"""The dashboard of a server whose model name attacks the terminal (tests/cli/
test_escape_injection.py's): the rendered screen holds no control character, the markup shows
literally and no link is planted, on the main screen and the diagnostics."""

from __future__ import annotations

from pathlib import Path

from hostile_text import CRAFTED, KEY, MARKUP, raw_controls
from live_helpers import until
from textual.content import Content

from specmon.config import MonitorConfig, Targets
from specmon.session.server_session import dashboard_session
from specmon.sim import SimThread
from specmon.storage.store import Store
from specmon.target import ApiKey, Target
from specmon.ui.app import SpecmonApp
from specmon.ui.screens.diagnostics import DiagnosticsScreen
from specmon.ui.widgets.identity_bar import IdentityBar


def _screen(app: SpecmonApp) -> tuple[str, list[str]]:
    """The screen's text as rendered, and every link its segments carry."""
    strips = app.screen._compositor.render_strips()
    links = [
        seg.style.link
        for strip in strips
        for seg in strip
        if seg.style is not None and seg.style.link
    ]
    return "\n".join(strip.text for strip in strips), links


async def test_the_dashboard_renders_a_hostile_model_name_inert(tmp_path: Path) -> None:
    with SimThread(CRAFTED) as sim, Store(tmp_path / "db") as store:
        config = MonitorConfig(
            url=sim.url, interval=0.5, probe_every=0.5, probe_tokens=24, read_timeout=10.0
        )
        target = Target(sim.url, ApiKey(KEY, "env SPECMON_API_KEY"), 10.0, 10.0)
        app = SpecmonApp(dashboard_session(config, Targets(target), store))
        async with app.run_test(size=(200, 50)) as pilot:
            await until(
                pilot,
                lambda: (
                    app.session.live.server.info is not None and len(app.session.live.probes) > 0
                ),
            )
            await pilot.pause()
            shown = [_screen(app)]
            # The identity's tooltip (markup) names the whole model: as text, never as markup
            # (its `[link=…]` is a markup error, its `[red]` a style).
            tooltip = app.query_one(IdentityBar).tooltip
            assert isinstance(tooltip, str)
            assert MARKUP in Content.from_markup(tooltip).plain
            await pilot.press("i")
            await until(pilot, lambda: isinstance(app.screen, DiagnosticsScreen))
            await pilot.pause()
            shown.append(_screen(app))
    for text, links in shown:
        assert not raw_controls(text)
        assert KEY not in text
        assert not [link for link in links if "x.example" in link]
    # The events log names the model: its escapes shown, its markup as text.
    assert "evil" in shown[0][0] and MARKUP in shown[0][0]
