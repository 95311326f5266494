"""The dashboard of several servers: the fleet table (8 servers readable at 80x24, 16 at
160x50, 60x15 not broken), worst first, a down server on top with its reason; Enter opens that
server's dashboard, whose keys work on it; Esc goes back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import (
    NOW,
    baseline_snapshot,
    gpus,
    sample,
    server_info,
    server_metrics,
)
from live_helpers import until
from replay import replay_probe
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Static

from specmon.analysis.figures import run_figures
from specmon.config import FleetTarget, MonitorConfig
from specmon.measure.snapshot import SnapshotKind
from specmon.session.baselines import BaselineOrigin
from specmon.session.fleet import Fleet
from specmon.session.fleet_row import FleetRow, Rank
from specmon.session.server_session import ServerSession
from specmon.session.watch import ProbeOutcome
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui import fleet_app as fleet_app_module
from specmon.ui.fleet_app import FleetApp
from specmon.ui.screens.baseline_choice import BaselineChoice
from specmon.ui.screens.fleet import COLUMNS, FleetScreen, _cells
from specmon.ui.screens.help import FLEET_KEYS, HelpScreen
from specmon.ui.screens.whatif import WhatIfScreen
from specmon.ui.widgets.fleet_table import FleetTable
from specmon.ui.widgets.identity_bar import IdentityBar

REFUSED = "http://10.1.230.101:8000/server_info: connection refused (nothing listening?)"
SIZES = [((60, 15), 8), ((80, 24), 8), ((160, 50), 16)]


def _url(i: int) -> str:
    return f"http://10.1.230.{101 + i}:8000"


def _fleet(count: int) -> tuple[MonitorConfig, Fleet]:
    targets = tuple(FleetTarget(_url(i), name=f"gpu-box-{i + 1:02d}") for i in range(count))
    config = MonitorConfig(url=targets[0].url, probe_tokens=256, fleet=targets)
    sessions = [
        ServerSession.of_target(t, Target(t.url), config, None, wall=lambda: NOW) for t in targets
    ]
    return config, Fleet(sessions)


PLAIN = 7
"""gpu-box-08 runs without speculation, with a baseline of its own (no speedup to show)."""


async def _feed(fleet: Fleet) -> None:
    """Server 1 down, 2 not reached yet, 3 with a stale baseline, 4 with none, 8 plain (with a
    baseline of its own); the rest healthy against a baseline: what their samplers and probes
    would have brought."""
    spec = [await replay_probe(f"spec/generate_stream_{i}.json") for i in range(3)]
    plain = [await replay_probe(f"plain/generate_stream_{i}.json") for i in range(3)]
    for i, session in enumerate(fleet.sessions):
        if i == 1:
            continue
        if i == 0:
            session.sample(sample(9.0, None, None, info_error=REFUSED, metrics_error=REFUSED))
            continue
        kind = "plain" if i == PLAIN else "spec"
        session.sample(sample(1.0, server_info(kind), server_metrics(f"{kind}/metrics")))
        session.sample(
            sample(
                2.0,
                server_info(kind),
                server_metrics(f"{kind}/metrics_after"),
                seq=2,
                telemetry=gpus(),
            )
        )
        for k, result in enumerate(plain if i == PLAIN else spec):
            session.probe_done(ProbeOutcome(NOW - 3 + k, float(k), run_figures(result), result))
        if i == 3:
            continue
        changes = {"mem_fraction_static": 0.5} if i == 2 else {}
        snapshot = await baseline_snapshot(NOW - (45 * 60 if i == 2 else 120), **changes)
        session.bench_done(snapshot, SnapshotKind.BASELINE, BaselineOrigin.BASELINE_SERVER)
        base = server_info("plain", **changes)
        session.baseline_sample(sample(2.5, base, server_metrics("plain/metrics_after")))


def _app(count: int) -> FleetApp:
    config, fleet = _fleet(count)
    return FleetApp(config, fleet, start_workers=False, wall=lambda: NOW)


def _shown(count: int) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run(pilot: Pilot[None]) -> None:
        app: FleetApp = pilot.app  # type: ignore[assignment]
        await _feed(app.fleet)
        await pilot.pause()

    return run


@pytest.mark.parametrize(("size", "count"), SIZES, ids=[f"{w}x{h}" for (w, h), _ in SIZES])
def test_snapshot(size: tuple[int, int], count: int, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(_app(count), terminal_size=size, run_before=_shown(count))


@pytest.mark.parametrize(("size", "count"), SIZES[1:], ids=["80x24", "160x50"])
async def test_every_row_readable(size: tuple[int, int], count: int) -> None:
    app = _app(count)
    async with app.run_test(size=size) as pilot:
        await _shown(count)(pilot)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        table = screen.query_one(FleetTable)
        assert table.row_count == count
        assert table.size.height >= count + 1  # the header and every row, no scrolling
        assert _labels(table)[:2] == ["server", "state"]
        assert {"tok/s", "speedup", "baseline", "accept", "spec"} <= set(_labels(table))
        if size[0] >= 160:
            assert _labels(table) == [c.label for c in COLUMNS]  # every column of the issue
        server = [text for (text, _), *_ in table.rows]
        assert server == [row.label for row in screen.rows]


def _labels(table: FleetTable) -> list[str]:
    return [label for _, label, _ in table.columns]


async def test_a_resize_chooses_the_columns_again() -> None:
    """Started narrow then widened (and back): the columns follow the terminal's width."""
    app = _app(8)
    async with app.run_test(size=(80, 24)) as pilot:
        await _shown(8)(pilot)
        table = app.screen.query_one(FleetTable)
        narrow = _labels(table)
        assert "software" not in narrow and "GPUs" not in narrow
        await pilot.resize_terminal(160, 50)
        await until(pilot, lambda: _labels(table) == [c.label for c in COLUMNS])
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: _labels(table) == narrow)


async def test_a_plain_server_has_no_speedup_and_its_gpus_are_under_the_table() -> None:
    """No speculation: "no spec" where the speedup would be, no baseline verdict, last in the
    order; the GPU cell is short and the line under the table has the GPUs in full."""
    app = _app(8)
    async with app.run_test(size=(160, 50)) as pilot:
        await _shown(8)(pilot)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        table = screen.query_one(FleetTable)
        plain = screen.rows[-1]
        assert plain.label == "gpu-box-08" and plain.rank == Rank.NO_SPECULATION
        cells = dict(zip(_labels(table), screen_rows(table)[7], strict=True))
        assert (cells["spec"], cells["speedup"], cells["baseline"]) == ("no spec", "no spec", "—")
        assert cells["accept"] == "—" and cells["GPUs"] == "8×H100 97% 59°C"
        assert cells["why"] == "speculation is off on this server"
        await pilot.press(*["down"] * 7)
        detail = str(screen.query_one("#fleet-row", Static).content)
        assert detail.splitlines()[1] == f"GPUs: {app.fleet.sessions[7].view().gpus.summary}"


async def test_worst_first_and_a_down_server_on_top_with_its_reason() -> None:
    app = _app(8)
    async with app.run_test(size=(80, 24)) as pilot:
        await _shown(8)(pilot)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        labels = [row.label for row in screen.rows]
        assert labels[:4] == ["gpu-box-01", "gpu-box-02", "gpu-box-03", "gpu-box-04"]
        assert screen.rows[0].state == "down" and "connection refused" in screen.rows[0].reason
        assert screen.rows[2].reason.startswith("baseline: ")  # the stale one
        detail = str(screen.query_one("#fleet-row", Static).content).splitlines()
        assert detail == [
            f"{_url(0)} · down: connection refused (nothing listening?)",
            "GPUs: no GPU reading yet",
        ]
        assert screen_rows(screen.query_one(FleetTable))[0][1] == "DOWN"


async def test_new_rows_repaint_only_the_lines_that_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 80x24 (no GPU column) a hotter GPU repaints nothing; a new probe repaints its row's
    line alone; a server going down moves rows: the lines whose texts changed are repainted
    (and the cursor's), the cursor staying on its server. The table always holds what the rows
    say."""
    app = _app(8)
    async with app.run_test(size=(80, 24)) as pilot:
        await _shown(8)(pilot)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        table = screen.query_one(FleetTable)
        repainted: list[int | None] = []  # the table's lines repainted; None: all of it
        refresh = table.refresh

        def spy(*regions: Region, **kwargs: bool) -> FleetTable:
            repainted.extend([r.y for r in regions] or [None])
            return refresh(*regions, **kwargs)

        monkeypatch.setattr(table, "refresh", spy)

        def shown() -> list[list[str]]:
            assert screen_rows(table) == [
                [text for text, _ in cells]
                for cells in (_shown_row(screen, row, _labels(table)) for row in screen.rows)
            ]
            return screen_rows(table)

        session = app.fleet.sessions[4]
        hot = gpus()
        hot = replace(hot, gpus=(replace(hot.gpus[0], temperature_c=88.0), *hot.gpus[1:]))
        session.sample(
            sample(
                3.0, server_info("spec"), server_metrics("spec/metrics_after"), seq=3, telemetry=hot
            )
        )
        await pilot.pause()
        index = [row.url for row in screen.rows].index(session.url)
        assert "88°C" in (screen.rows[index].gpu or "") and repainted == []
        before = shown()
        result = await replay_probe("spec/generate_stream_0.json")
        session.probe_done(ProbeOutcome(NOW, 9.0, run_figures(result), result))
        await pilot.pause()
        after = shown()
        assert [row.url for row in screen.rows].index(session.url) == index  # the same order
        assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [index]
        assert repainted == [index + 1]  # under the header
        await pilot.press("down", "down")
        cursor, before = table.cursor_row, shown()
        repainted.clear()
        session.sample(sample(9.0, None, None, info_error=REFUSED, metrics_error=REFUSED))
        await pilot.pause()
        after = shown()
        assert {row.url for row in screen.rows[:2]} == {_url(0), session.url}
        assert [cells[1] for cells in after[:2]] == ["DOWN", "DOWN"]
        assert screen.rows[table.cursor_row].url == _url(2)  # where the cursor was
        moved = {i + 1 for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b}
        assert set(repainted) == moved | {cursor + 1, table.cursor_row + 1}
        assert len(moved) < len(after)  # the rows above the one that moved kept their lines


def _shown_row(screen: FleetScreen, row: FleetRow, labels: list[str]) -> list[tuple[str, str]]:
    """The cells the table should hold for `row`, by the screen's own cells (uncut: 8 servers
    at 80x24 fit their shown columns whole)."""
    cells = dict(zip([c.label for c in COLUMNS], _cells(row), strict=True))
    return [(cells[label], "") for label in labels]


async def test_enter_opens_a_server_and_esc_goes_back() -> None:
    app = _app(8)
    async with app.run_test(size=(80, 24)) as pilot:
        await _shown(8)(pilot)
        await pilot.press("p")  # the dashboard's keys do nothing on the table
        assert not any(s.live.probe_paused for s in app.fleet.sessions)
        await pilot.press("down", "down", "down", "down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, FleetScreen)
        chosen = app.fleet.sessions[4]
        assert app.session is chosen
        await pilot.pause()
        assert app.query_one(IdentityBar).view.url == chosen.url
        await pilot.press("p")  # keys as on a lone server, on this one
        assert chosen.live.probe_paused
        assert not any(s.live.probe_paused for s in app.fleet.sessions if s is not chosen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        assert app.screen.rows[0].label == "gpu-box-01"


async def test_live_fleet_and_b_on_a_chosen_server(tmp_path: Path) -> None:
    """Two simulated servers, each with its plain twin: rows go live, Enter opens one, `b` there
    takes its baseline from its own baseline server, and the table then shows its speedup."""
    fast = SimConfig(plain_step_ms=4.0, cycle_ms=7.0, accept_length=2.1, ttft_ms=5.0, seed=11)
    with (
        SimThread(fast) as a,
        SimThread(replace(fast, tp_size=4)) as b,
        SimThread(replace(fast, tp_size=4, speculative_algorithm=None)) as b_plain,
        Store(tmp_path / "db") as store,
    ):
        targets = (FleetTarget(a.url, name="a"), FleetTarget(b.url, b_plain.url, "b"))
        config = MonitorConfig(
            url=a.url,
            interval=0.2,
            probe_every=0.2,
            probe_tokens=120,
            baseline_runs=3,
            fleet=targets,
        )
        fleet = Fleet([ServerSession.of_target(t, Target(t.url), config, store) for t in targets])
        app = FleetApp(config, fleet)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.screen
            assert isinstance(screen, FleetScreen)

            def both_live() -> bool:
                rows = screen.rows
                return len(rows) == 2 and all(r.state == "live" and r.decode_tok_s for r in rows)

            await until(pilot, both_live)
            index = [r.label for r in screen.rows].index("b")
            await pilot.press(*["down"] * index, "enter")
            await until(pilot, lambda: not isinstance(app.screen, FleetScreen))
            assert app.session.url == b.url and app.session.config.baseline_url == b_plain.url
            await pilot.press("b")
            await until(pilot, lambda: fleet.sessions[1].live.baseline.snapshot is not None)
            assert fleet.sessions[0].live.baseline.snapshot is None
            await pilot.press("escape")
            await until(
                pilot,
                lambda: (
                    isinstance(app.screen, FleetScreen)
                    and any(r.label == "b" and r.speedup is not None for r in app.screen.rows)
                ),
            )
        emitted = [r for r in b_plain.server.emitted if r.max_new_tokens == 120]
        assert len(emitted) == 4  # the warm-up and three runs, at b's own baseline server
        assert not [r for r in a.server.emitted if r.max_new_tokens != 120]


async def test_at_80x24_the_columns_the_docs_promise_fit_beside_long_names() -> None:
    """Issue 25: servers named by their address (`127.0.0.1:37383`) running EAGLE3 lost the
    cycle column at 80x24 (the GPUs' "—" took its room, and "cycle ms" was 3 cells too many)."""
    targets = tuple(FleetTarget(f"http://127.0.0.1:{37383 + i}") for i in range(8))
    config = MonitorConfig(url=targets[0].url, probe_tokens=256, fleet=targets)
    sessions = [
        ServerSession.of_target(t, Target(t.url), config, None, wall=lambda: NOW) for t in targets
    ]
    app = FleetApp(config, Fleet(sessions), start_workers=False, wall=lambda: NOW)
    eagle = server_info(
        "spec",
        speculative_algorithm="EAGLE3",
        speculative_num_steps=2,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=3,
    )
    # The captures are NGRAM's (draft tokens 4): an EAGLE3 2/1/3 server's gauges say 3, or the
    # spec cell would add what it drafts otherwise than its flags.
    before, after = (
        replace(server_metrics(f"spec/{name}"), spec_num_draft_tokens=3.0)
        for name in ("metrics", "metrics_after")
    )
    async with app.run_test(size=(80, 24)) as pilot:
        for session in sessions:
            session.sample(sample(1.0, eagle, before))
            session.sample(sample(2.0, eagle, after, seq=2))
            result = await replay_probe("spec/generate_stream_0.json")
            session.probe_done(ProbeOutcome(NOW, 1.0, run_figures(result), result))
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        assert screen_rows(table)[0][:3] == ["127.0.0.1:37383", "live", "EAGLE3 2/1/3"]
        assert _labels(table) == [
            "server",
            "state",
            "spec",
            "tok/s",
            "accept",
            "cycle",
            "speedup",
            "baseline",
        ]


def screen_rows(table: FleetTable) -> list[list[str]]:
    return [[text for text, _ in row] for row in table.rows]


async def test_a_server_gone_down_shows_its_last_figures_dimmed() -> None:
    app = _app(8)
    async with app.run_test(size=(160, 50)) as pilot:
        await _shown(8)(pilot)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        table = screen.query_one(FleetTable)
        session = app.fleet.sessions[4]
        session.sample(sample(9.0, None, None, info_error=REFUSED, metrics_error=REFUSED))
        await pilot.pause()
        index = [row.url for row in screen.rows].index(session.url)
        cells = dict(zip(_labels(table), table.rows[index], strict=True))
        assert cells["state"][0] == "DOWN" and cells["tok/s"][0] == "824.4"
        dimmed = {label for label, (_, style) in cells.items() if style == "dim"}
        assert dimmed == {
            "software",
            "spec",
            "tok/s",
            "accept",
            "cycle",
            "speedup",
            "baseline",
            "GPUs",
        }
        live = [row.state for row in screen.rows].index("live")
        assert not any(style for _, style in table.rows[live])


async def test_w_and_help_on_the_table_act_on_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25: `w` on the table opened the what-if of the server visited last, not the one
    highlighted; `?` listed the single-server keys. Now `w` is the highlighted server's and `?`
    lists the table's keys."""
    app = _app(8)
    asked: list[ServerSession] = []
    real = fleet_app_module.SpecmonApp._open_what_if

    def spy(self: FleetApp, session: ServerSession) -> None:
        asked.append(session)
        real(self, session)

    monkeypatch.setattr(fleet_app_module.SpecmonApp, "_open_what_if", spy)
    async with app.run_test(size=(80, 24)) as pilot:
        await _shown(8)(pilot)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await pilot.press("down", "down", "down", "down", "enter")  # visit one server
        await pilot.pause()
        visited = app.session
        await pilot.press("escape")
        await pilot.pause()
        table = app.screen
        assert isinstance(table, FleetScreen)
        await pilot.press("down")
        highlighted = app.fleet.get(table.highlighted() or "")
        assert highlighted is not None and highlighted is not visited
        await pilot.press("w")
        await pilot.pause()
        assert isinstance(app.screen, WhatIfScreen)
        assert asked == [highlighted]
        await pilot.press("escape")
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen) and app.screen.keys == FLEET_KEYS


async def test_b_in_a_fleet_names_the_config_file_and_the_backends_flags() -> None:
    """Issue 25: the dialog suggested --baseline-url (refused with several --url) and SGLang's
    flags on a vLLM server."""
    app = _app(2)
    async with app.run_test(size=(120, 40)) as pilot:
        vllm = replace(server_info("spec"), backend="vllm")
        for session in app.fleet.sessions:
            session.sample(sample(1.0, vllm, None))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("b")
        await pilot.pause()
        assert isinstance(app.screen, BaselineChoice)
        text = " ".join(str(app.screen.query_one("#dialog-text", Static).render()).split())
        assert "baseline_url in its [[targets]] table of the config file" in text
        assert "minus --speculative-config." in text and "--speculative-*" not in text


async def test_a_bug_in_one_session_stops_no_other_and_is_said_in_its_events_log() -> None:
    """An exception one session raises restarts that session alone (`Fleet._supervise`): the
    table runs on, the failure is counted and its events log says what stopped it (issue 36: one
    hostile reply took the whole fleet down)."""
    config = MonitorConfig(url="http://127.0.0.1:9", interval=0.1, probe=False)
    targets = (FleetTarget("http://127.0.0.1:9"), FleetTarget("http://127.0.0.1:10"))
    fleet = Fleet([ServerSession.of_target(t, Target(t.url), config, None) for t in targets])

    def crash(_: object) -> None:
        raise RuntimeError("a bug")

    broken = fleet.sessions[1]
    broken.live.on_sample = crash  # type: ignore[method-assign]
    app = FleetApp(replace(config, fleet=targets), fleet)
    async with app.run_test() as pilot:
        await until(pilot, lambda: fleet.failures.get(broken.url, 0) >= 1)
        await pilot.pause()
        assert app.return_code is None and isinstance(app.screen, FleetScreen)
        said = [event.text for event in broken.live.events]
        assert any("stopped by an internal error (RuntimeError: a bug)" in t for t in said), said
        assert fleet.failures.get(fleet.sessions[0].url, 0) == 0


async def test_the_table_keeps_its_order_and_filter_across_a_visit_and_lists_its_keys() -> None:
    """Issue 38: the sort chosen with `o` was back to worst first after a server's dashboard;
    the keys line said "Esc: back" (Esc does nothing on the table) and left out ?, w, f, d, t."""
    app = _app(8)
    async with app.run_test(size=(80, 24)) as pilot:
        await _shown(8)(pilot)
        table = app.screen
        assert isinstance(table, FleetScreen)
        keys = str(table.query_one("#fleet-keys", Static).content)
        assert "Esc" not in keys and "? help" in keys and "w what-if" in keys
        await pilot.press("o", "o")  # by tok/s
        order = table.order
        assert order != "worst first"
        await pilot.press("down", "enter")
        await pilot.pause()
        opened = app.session.url
        await pilot.press("escape")
        await pilot.pause()
        again = app.screen
        assert isinstance(again, FleetScreen) and again is not table
        assert again.order == order and order in str(again.query_one("#fleet-title").render())
        assert again.highlighted() == opened  # the cursor on the server just visited
        await pilot.resize_terminal(40, 15)
        await pilot.pause()
        keys = str(again.query_one("#fleet-keys", Static).content)
        assert keys == "Enter open · w what-if · ? help · q quit"
