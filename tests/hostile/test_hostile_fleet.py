"""The fleet dashboard watching several hostile servers and one good one (issue 36 §1, §3): the
good server's row stays live with its own figures; a hostile server specmon cannot read is
marked down, with a one-line reason, and asked again; one it can read shows finite figures;
no session needs restarting, nothing reaches the screen as a control character, and the app
keeps running."""

from __future__ import annotations

import math
from contextlib import ExitStack
from pathlib import Path

import pytest
from hostile.checks import CONTROL, controls, shown, until
from hostile.server import CASES, FAST, HostileThread

from specmon.config import FleetTarget, MonitorConfig
from specmon.session.fleet import Fleet
from specmon.session.fleet_row import Rank
from specmon.session.server_session import ServerSession
from specmon.sim import SimThread
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui.fleet_app import FleetApp
from specmon.ui.screens.fleet import FleetScreen

pytestmark = pytest.mark.slow  # several servers and a fleet dashboard

HOSTILE = [
    c
    for c in CASES
    if c.crash_on_main
    or not c.reachable
    or c.name in ("escapes in every server-info string", "stream chunk nested 5,000 deep")
]
"""Every case specmon cannot read (down), the two that crashed it, escapes and a deep stream."""
GOOD = "good"


async def test_hostile_rows_fail_alone_and_the_good_row_stays_right(tmp_path: Path) -> None:
    with ExitStack() as stack:
        servers = [stack.enter_context(HostileThread(case)) for case in HOSTILE]
        good = stack.enter_context(SimThread(FAST))
        store = stack.enter_context(Store(tmp_path / "db"))
        targets = (
            *(FleetTarget(s.url, name=f"bad-{i}") for i, s in enumerate(servers)),
            FleetTarget(good.url, name=GOOD),
        )
        config = MonitorConfig(
            url=good.url,
            interval=0.3,
            probe_every=0.3,
            probe_tokens=16,
            connect_timeout=1.0,
            read_timeout=1.0,
            fleet=targets,
        )
        fleet = Fleet(
            [
                ServerSession.of_target(
                    t, Target(t.url, connect_timeout=1.0, read_timeout=1.0), config, store
                )
                for t in targets
            ]
        )
        app = FleetApp(config, fleet)
        async with app.run_test(size=(160, 50)) as pilot:
            screen = app.screen
            assert isinstance(screen, FleetScreen)

            def settled() -> bool:
                shown_rows = {r.label: r for r in screen.all_rows}
                if len(shown_rows) != len(targets):
                    return False
                good_row = shown_rows[GOOD]
                if good_row.state != "live" or good_row.decode_tok_s is None:
                    return False
                for i, case in enumerate(HOSTILE):
                    row = shown_rows[f"bad-{i}"]
                    if not case.reachable and row.rank != Rank.DOWN:
                        return False
                    if case.reachable and row.state != "live":
                        return False
                return True

            await until(pilot, settled, limit_s=60)
            asked = [sum(s.server.requests.values()) for s in servers]
            # Marked down and asked again: each unreadable server hears from specmon later on.
            await until(
                pilot,
                lambda: all(
                    sum(s.server.requests.values()) > n for s, n in zip(servers, asked, strict=True)
                ),
            )
            await pilot.pause()
            assert app.return_code is None and app.is_running
            assert isinstance(app.screen, FleetScreen)
            assert fleet.failures == {}  # no session stopped: each input was read or refused
            by_label = {r.label: r for r in screen.all_rows}
            good_row = by_label[GOOD]
            assert good_row.title == f"SGLang {FAST.version}"
            assert good_row.speculation == "EAGLE3 2/1/3"  # FAST's flags, nothing of another row
            assert good_row.decode_tok_s is not None and math.isfinite(good_row.decode_tok_s)
            # Not dragged down by its neighbours: live, probing, its own figures and title.
            assert good_row.rank not in (Rank.DOWN, Rank.CONNECTING, Rank.STALE)
            assert good_row.rank != Rank.PROBE_FAILING, good_row
            for i, case in enumerate(HOSTILE):
                row = by_label[f"bad-{i}"]
                assert "\n" not in row.reason and not CONTROL & set(row.reason), (case, row)
                if not case.reachable:
                    assert row.rank == Rank.DOWN and row.reason, (case.name, row)
                for number in (row.decode_tok_s, row.accept_length, row.cycle_ms, row.speedup):
                    assert number is None or math.isfinite(number), (case.name, row)
            text = shown(app)
            assert not CONTROL & set(text), controls(text)
