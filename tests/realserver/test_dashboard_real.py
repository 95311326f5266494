"""The live dashboard (Pilot, headless) against each real speculative server, and against
llama.cpp with its plain twin as the baseline server: what it shows agrees with the server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from real_helpers import RealServer
from textual.pilot import Pilot

from specmon.config import MonitorConfig, Targets
from specmon.sources.http import Target
from specmon.store import Store
from specmon.ui.app import SpecmonApp

pytestmark = pytest.mark.realserver


async def until(pilot: Pilot[None], condition: Callable[[], bool], limit_s: float = 120) -> None:
    """Let the app run until `condition` holds (fails after `limit_s`)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await pilot.pause(0.1)


def _app(url: str, baseline_url: str | None, store: Store) -> SpecmonApp:
    config = MonitorConfig(url=url, baseline_url=baseline_url, probe_every=1, probe_tokens=128,
                           baseline_runs=3, read_timeout=30)  # fmt: skip
    targets = Targets(Target(url, read_timeout=30),
                      Target(baseline_url, read_timeout=30) if baseline_url else None)  # fmt: skip
    return SpecmonApp(config, targets, store)


async def test_dashboard_shows_a_real_speculative_server(
    real_server: RealServer, tmp_path: Path
) -> None:
    with Store(tmp_path / "db") as store:
        app = _app(real_server.url, None, store)
        async with app.run_test(size=(160, 50)) as pilot:
            await until(pilot, lambda: len(app.live.probes) >= 2)
            view = app._last_view
            assert view is not None
            assert view.identity.state == "live"
            assert view.identity.speculation not in ("no speculation", "unknown")
            assert view.decode.decode_tok_s is not None and view.decode.decode_tok_s > 0
            assert view.spec.accept_length is not None and view.spec.accept_length >= 1
            assert view.spec.cycle_ms is not None and view.spec.cycle_ms > 0
            await pilot.press("p", "i")  # keys answer against a real server too
            assert app.live.probe_paused


async def test_dashboard_baseline_against_the_plain_llamacpp_twin(
    llamacpp_url: str, llamacpp_plain_url: str, tmp_path: Path
) -> None:
    with Store(tmp_path / "db") as store:
        app = _app(llamacpp_url, llamacpp_plain_url, store)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.live.server.info is not None)
            await pilot.press("b")
            await until(
                pilot,
                lambda: app.live.baseline.snapshot is not None and len(app.live.probes) >= 2,
            )
            view = app._last_view
            assert view is not None
            assert view.baseline.present and view.baseline.tok_s is not None
            comparison = view.baseline.comparison
            assert comparison is not None
            assert comparison.now_tok_s / comparison.base_tok_s - 1 == comparison.speedup.value
            assert store.list()[0].server.speculative is None
