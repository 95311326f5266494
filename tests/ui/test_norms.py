"""Monitor norms (issue 28, item 5) on the dashboard: `f` freezes the screen while sampling goes
on, `d` dumps it as SVG and text into the dumps folder. Messages are pushed by hand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import sample, server_info, server_metrics
from test_dashboard import healthy, push_server
from test_fleet_dashboard import _app as fleet_app
from test_fleet_dashboard import _shown as fleet_shown
from textual.widgets import Static

from specmon.analysis.comparison import Verdict
from specmon.ui.app import SpecmonApp
from specmon.ui.screens.fleet import FleetScreen, keys_line
from specmon.ui.widgets.baseline_panel import BaselinePanel
from specmon.ui.widgets.events_log import EventsLog
from specmon.ui.widgets.server_panel import ServerPanel


async def test_freeze_keeps_the_frame_while_sampling_goes_on(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await healthy()(pilot)
        await pilot.press("f")
        keys = str(app.query_one("#keys", Static).content)
        assert keys.endswith(" frozen ") and " q quit " in keys
        shown = app.query_one(ServerPanel).view
        frozen_events = app.query_one("#events").events  # type: ignore[attr-defined]
        assert frozen_events[-1].text == "screen frozen: sampling goes on; f resumes"
        later = sample(30.0, server_info(), server_metrics("spec/metrics_after"), seq=3)
        app.session.sample(later)
        await pilot.pause()
        assert app.session.live.sample is later  # sampled ...
        assert app.query_one(ServerPanel).view is shown  # ... not shown
        await pilot.press("f")
        assert app.query_one(ServerPanel).view is not shown
        assert (
            app.query_one(ServerPanel).view
            == app.session.live.view(app.wall(), stale_after=3.0).server
        )
        keys = str(app.query_one("#keys", Static).content)
        assert "frozen" not in keys
        assert app.query_one("#events").events[-1].text == "screen resumed"  # type: ignore[attr-defined]


async def test_dump_writes_the_screen_as_svg_and_text_and_says_where(
    make_app: Callable[..., SpecmonApp], tmp_path: Path
) -> None:
    app = make_app()
    app.config = replace(app.config, dumps=str(tmp_path / "dumps"))
    async with app.run_test(size=(80, 24)) as pilot:
        await push_server(pilot)
        await pilot.pause()
        await pilot.press("d", "d")
        await pilot.pause()
        texts = sorted((tmp_path / "dumps").glob("*.txt"), key=lambda p: len(p.name))
        svgs = sorted((tmp_path / "dumps").glob("*.svg"), key=lambda p: len(p.name))
        assert [p.stem for p in texts] == [p.stem for p in svgs] and len(texts) == 2
        first, second = texts  # the same second: the second dump does not overwrite the first
        assert second.stem == first.stem + "-2"
        text = first.read_text(encoding="utf-8").splitlines()
        assert len(text) == 24 and all(len(line) <= 80 for line in text)
        assert "● live · 10.1.230.174:8000" in text[0] and "q quit" in text[-1]
        assert "Decode 912.7 tok/s (probe)" in text[2]  # the figures on screen, in words
        assert svgs[0].read_text(encoding="utf-8").startswith("<svg")
        said = [e.text for e in app.session.live.events]
        assert said[-2:] == [
            f"screen dumped: {svgs[0]} (and {first.name})",
            f"screen dumped: {svgs[1]} (and {second.name})",
        ]


async def test_a_dump_that_cannot_be_written_says_why(
    make_app: Callable[..., SpecmonApp], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    app = make_app()
    app.config = replace(app.config, dumps=str(blocker))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        [event] = [e for e in app.session.live.events if e.level == "error"]
        assert event.text == f"screen dump failed: {blocker}: File exists"


async def test_read_only_has_no_dump_key(
    make_app: Callable[..., SpecmonApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(read_only=True)
    app.config = replace(app.config, dumps=str(tmp_path / "dumps"))
    async with app.run_test(size=(80, 24)) as pilot:
        assert " d " not in str(app.query_one("#keys", Static).content)
        await pilot.press("d")
        await pilot.pause()
        assert not (tmp_path / "dumps").exists()
        said = [n.message for n in app._notifications]
        assert said == ["read-only: d is off in this dashboard (it writes files)"]


async def test_freeze_holds_the_fleet_table_too() -> None:
    app = fleet_app(3)
    async with app.run_test(size=(80, 24)) as pilot:
        await fleet_shown(3)(pilot)
        table = app.screen
        assert isinstance(table, FleetScreen)
        before = table.rows
        await pilot.press("f")
        assert str(table.query_one("#fleet-keys", Static).content) == keys_line(80, frozen=True)
        second = app.fleet.sessions[1]  # not reached until now
        second.sample(sample(3.0, server_info(), server_metrics("spec/metrics")))
        await pilot.pause()
        assert table.rows is before
        await pilot.press("f")
        await pilot.pause()
        assert str(table.query_one("#fleet-keys", Static).content) == keys_line(80)
        states = {row.url: row.state for row in table.rows}
        assert (
            states[second.url] == "live"
            and states[second.url] != {row.url: row.state for row in before}[second.url]
        )


async def test_a_flipped_verdict_rings_and_flashes_once(
    make_app: Callable[..., SpecmonApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session's state gives verdicts by hand: the session says in its events log when the
    verdict turns into another of winning / losing / within noise (not at every View that keeps
    it, nor over a gap without one), and the dashboard rings at each change it shows."""
    app = make_app()
    rings: list[None] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(None))
    async with app.run_test(size=(80, 24)) as pilot:
        await healthy()(pilot)
        panel = app.query_one(BaselinePanel)
        live = app.session.live
        now = live.view(app.wall(), stale_after=3.0)
        assert now.baseline.current_runs > 1  # settled: a first probe's verdict is no change

        def push(verdict: Verdict | None) -> None:
            with_events = replace(now, events=tuple(live.events))
            shown = replace(with_events, spec=replace(now.spec, verdict=verdict))
            monkeypatch.setattr(live, "view", lambda *_: shown)
            app.refresh_view()

        rung = []
        for verdict in (
            Verdict.WINNING,
            Verdict.WINNING,
            None,
            Verdict.WINNING,
            Verdict.LOSING,
            Verdict.LOSING,
            None,
            Verdict.WITHIN_NOISE,
        ):
            push(verdict)
            rung.append(len(rings))
        assert rung == [0, 0, 0, 0, 1, 1, 1, 2]
        assert panel.has_class("-flash")
        said = [e.text for e in app.session.live.events if e.text.startswith("verdict: ")]
        assert said == ["verdict: winning → losing", "verdict: losing → within noise"]
        assert app.query_one(EventsLog).events[-1].text == "verdict: losing → within noise"


async def test_slash_keeps_the_events_holding_a_text(make_app: Callable[..., SpecmonApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 30)) as pilot:
        await healthy()(pilot)
        log = app.query_one(EventsLog)
        everything = str(log.content)
        await pilot.press("slash", *"BASELINE", "enter")
        shown = str(log.content).splitlines()
        assert shown and all("baseline" in line.casefold() for line in shown)
        assert len(shown) < len(everything.splitlines())
        assert log.border_title == "Events holding 'BASELINE'"
        await pilot.press("slash", *"zzz", "escape")  # Esc keeps the filter as it was
        assert log.filter == "BASELINE"
        await pilot.press("slash")
        await pilot.press(*["backspace"] * 8, "enter")  # empty: all again
        assert log.filter == "" and str(log.content) == everything


def _order_of(table: FleetScreen) -> list[str]:
    return [row.label for row in table.rows]


async def test_the_fleet_table_sorts_by_column_and_filters_by_name() -> None:
    app = fleet_app(8)
    async with app.run_test(size=(160, 50)) as pilot:
        await fleet_shown(8)(pilot)
        table = app.screen
        assert isinstance(table, FleetScreen)
        worst = _order_of(table)
        assert worst[:2] == ["gpu-box-01", "gpu-box-02"]  # down, then not reached
        await pilot.press("o")
        assert _order_of(table) == sorted(worst)
        assert "8 servers, by server" in str(table.query_one("#fleet-title", Static).content)
        await pilot.press("o")  # tok/s: the fastest first, the servers without a probe last
        speeds = [row.decode_tok_s for row in table.rows]
        known = [s for s in speeds if s is not None]
        assert known == sorted(known, reverse=True) and speeds[len(known) :] == [None, None]
        await pilot.press("o", "o", "o", "o")  # speedup, accept, cycle, and round
        assert _order_of(table) == worst
        await pilot.press("slash", *"BOX-0", "3", "enter")
        assert _order_of(table) == ["gpu-box-03"]
        title = str(table.query_one("#fleet-title", Static).content)
        assert "1 of 8 servers holding 'BOX-03', worst first" in title
        await pilot.press("slash", *["backspace"] * 6, *"10.1.230.10", "enter")  # the address
        assert len(table.rows) == 8
        app.show_rows()  # new rows keep the order and filter
        await pilot.pause()
        assert len(table.rows) == 8 and table.filter == "10.1.230.10"
