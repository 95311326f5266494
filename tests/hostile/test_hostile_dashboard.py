"""The dashboard against a hostile server, one nasty input at a time (issue 36 §1's harness
through its first surface): it keeps running and answering keys, every figure of its View is
finite or missing, and nothing the server sent reaches the terminal as a control character.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile.server import CASES, IDS, Case, HostileThread
from textual.pilot import Pilot
from textual.widgets import Static

from specmon.config import MonitorConfig, Targets
from specmon.session.server_session import dashboard_session
from specmon.session.view_json import view_to_dict
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui.app import SpecmonApp

pytestmark = pytest.mark.slow  # ~2–4 s a case: a server and a dashboard

CONTROL = {chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))} - {"\n"}
"""What must never reach the terminal from a server: C0 and C1 controls (an escape starts
each sequence), DEL; newlines are the widgets' own."""
KEYS = ("c", "escape", "i", "escape", "w", "escape", "question_mark", "escape", "z", "p", "p")


async def _until(pilot: Pilot[None], condition: Callable[[], bool], limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await pilot.pause(0.05)


def _finite(value: object) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float):
            assert math.isfinite(item), item


def _shown(app: SpecmonApp) -> str:
    """Every text the screen shows: its Statics' content and every widget's border titles."""
    texts = [str(w.render()) for w in app.screen.query(Static)]
    texts += [str(w.border_title or "") + str(w.border_subtitle or "") for w in app.screen.query()]
    return "\n".join(texts)


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
            await _until(
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
            _finite(json.loads(json.dumps(view_to_dict(view))))
            shown = _shown(app)
            assert not CONTROL & set(shown), [c for c in shown if c in CONTROL][:5]
            assert all("\n" not in event.text for event in session.live.events)
