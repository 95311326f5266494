"""The dashboard against a hostile server, one nasty input at a time (issue 36 §1's harness
through its first surface): it keeps running and answering keys, every figure of its View is
finite or missing, and nothing the server sent reaches the terminal as a control character.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile.checks import CONTROL, controls, finite, shown, until
from hostile.server import CASES, IDS, Case, HostileThread

from specmon.config import MonitorConfig, Targets
from specmon.session.server_session import dashboard_session
from specmon.session.view_json import view_to_dict
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui.app import SpecmonApp

pytestmark = pytest.mark.slow  # ~2–4 s a case: a server and a dashboard

KEYS = ("c", "escape", "i", "escape", "w", "escape", "question_mark", "escape", "z", "p", "p")


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_the_dashboard_outlives_it_and_writes_no_control_character(
    case: Case, tmp_path: Path
) -> None:
    with HostileThread(case) as server, Store(tmp_path / "db") as store:
        config = MonitorConfig(
            url=server.url, interval=0.2, probe_every=0.2, probe_tokens=12, read_timeout=1.0
        )  # type: ignore[call-arg]
        target = Target(server.url, connect_timeout=1.0, read_timeout=1.0)
        app = SpecmonApp(dashboard_session(config, Targets(target, None), store))
        async with app.run_test(size=(120, 40)) as pilot:
            session = app.session
            # Reachable: two probes tried; not: the server's failure read twice (events said).
            await until(
                pilot,
                lambda: (
                    session.probes_ok + session.probes_failed >= 2
                    if case.reachable
                    else len(session.live.events) >= 2
                ),
            )
            for key in KEYS:
                await pilot.press(key)
                await pilot.pause()
            await pilot.pause(0.3)
            assert app.return_code is None and app.is_running
            view = session.view()
            finite(json.loads(json.dumps(view_to_dict(view))))
            text = shown(app)
            assert not CONTROL & set(text), controls(text)
            assert all("\n" not in event.text for event in session.live.events)
