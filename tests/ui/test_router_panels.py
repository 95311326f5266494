"""Behind a router: the dashboard's server panel and events log name a worker left out of the
summed figures, and say when it is back; live, against simulated workers behind the simulator's
router, with a baseline from a baseline server."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from conftest import sample, server_info, server_metrics
from live_helpers import until
from router import router_thread
from test_dashboard import healthy

from specmon.config import MonitorConfig, Targets
from specmon.model import WorkerStatus
from specmon.session.server_session import dashboard_session
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui.app import SpecmonApp
from specmon.ui.widgets.events_log import EventsLog
from specmon.ui.widgets.server_panel import ServerPanel

UP = WorkerStatus("http://w1:30000")
DOWN = WorkerStatus("http://w2:30000", "http://w2:30000/metrics: connection refused", 0.0)


async def test_a_worker_left_out_is_named_and_its_return_and_restart_said(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    metrics = server_metrics("spec/metrics_after")
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        partial = replace(metrics, workers=(UP, DOWN))
        app.session.sample(sample(14.0, server_info(), partial, seq=3))
        await pilot.pause()
        panel = " ".join(str(app.query_one(ServerPanel).render()).split())
        assert "metrics partial: 1 of 2 workers left out: worker w2:30000 down since" in panel
        whole = replace(metrics, workers=(UP, replace(UP, url=DOWN.url)))
        app.session.sample(sample(15.0, server_info(), whole, seq=4))
        await pilot.pause()
        panel = str(app.query_one(ServerPanel).render())
        restarted = replace(metrics, workers=(replace(UP, reset=True), replace(UP, url=DOWN.url)))
        app.session.sample(sample(16.0, server_info(), restarted, seq=5))
        await pilot.pause()
        events = " ".join(str(app.query_one(EventsLog).render()).split())
    assert "partial" not in panel
    assert "worker w2:30000 down since" in events and "left out of the summed figures" in events
    assert "worker w2:30000 back: in the summed figures again" in events
    assert "worker w1:30000 restarted (its counters went down or vanished)" in events


FAST = SimConfig(plain_step_ms=4.0, cycle_ms=7.0, accept_length=2.1, ttft_ms=5.0, seed=11)


async def test_the_dashboard_behind_a_router_with_a_baseline_and_a_worker_killed(
    tmp_path: Path,
) -> None:
    """Live: probes through the router, `b` from the baseline server, then a worker killed."""
    plain = replace(FAST, speculative_algorithm=None)
    with contextlib.ExitStack() as stack:
        workers = [stack.enter_context(SimThread(FAST)) for _ in range(2)]
        base = stack.enter_context(SimThread(plain))
        url = stack.enter_context(router_thread([w.url for w in workers]))
        store = stack.enter_context(Store(tmp_path / "db"))
        urls = tuple(w.url for w in workers)
        config = MonitorConfig(
            url=url, baseline_url=base.url, metrics_url=urls, interval=0.2, probe_every=0.2,
            probe_tokens=120, baseline_runs=3, read_timeout=1.0,
        )  # fmt: skip
        targets = Targets(
            Target(url, read_timeout=1.0, metrics_urls=urls), Target(base.url, read_timeout=1.0)
        )
        app = SpecmonApp(dashboard_session(config, targets, store))
        async with app.run_test(size=(160, 50)) as pilot:
            await until(pilot, lambda: app.session.live.server.info is not None)
            await pilot.press("b")
            await until(pilot, lambda: app.session.live.baseline.snapshot is not None)
            await until(pilot, lambda: len(app.session.live.probes) >= 3)
            whole = app._last_view
            workers[1].call(workers[1].server.stop)
            await until(
                pilot,
                lambda: (
                    app._last_view is not None
                    and app._last_view.server.metrics_state.startswith("partial")
                ),
            )
            partial = app._last_view
            panel = " ".join(str(app.query_one(ServerPanel).render()).split())
    assert whole is not None and whole.server.metrics_state == "ok"
    assert whole.baseline.comparison is not None and whole.spec.accept_length is not None
    assert whole.server.decode_tok_s is not None  # the workers' summed counters
    assert partial is not None and partial.identity.state == "live"
    name = workers[1].url.removeprefix("http://")
    assert f"metrics partial: 1 of 2 workers left out: worker {name} down since" in panel
