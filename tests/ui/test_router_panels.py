"""Behind a router: the dashboard's server panel and events log name a worker left out of the
summed figures, and say when it is back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from conftest import sample, server_info, server_metrics
from test_dashboard import healthy

from specmon.model import WorkerStatus
from specmon.ui.app import SpecmonApp
from specmon.ui.messages import SampleReady
from specmon.ui.widgets.events_log import EventsLog
from specmon.ui.widgets.server_panel import ServerPanel

UP = WorkerStatus("http://w1:30000")
DOWN = WorkerStatus("http://w2:30000", "http://w2:30000/metrics: connection refused", 0.0)


async def test_a_worker_left_out_is_named_and_its_return_said(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    metrics = server_metrics("spec/metrics_after")
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        partial = replace(metrics, workers=(UP, DOWN))
        app.post_message(SampleReady(sample(14.0, server_info(), partial, seq=3)))
        await pilot.pause()
        panel = " ".join(str(app.query_one(ServerPanel).render()).split())
        assert "metrics partial: 1 of 2 workers left out: worker w2:30000 down since" in panel
        whole = replace(metrics, workers=(UP, replace(UP, url=DOWN.url)))
        app.post_message(SampleReady(sample(15.0, server_info(), whole, seq=4)))
        await pilot.pause()
        panel = str(app.query_one(ServerPanel).render())
        events = " ".join(str(app.query_one(EventsLog).render()).split())
    assert "partial" not in panel
    assert "worker w2:30000 down since" in events and "left out of the summed figures" in events
    assert "worker w2:30000 back: in the summed figures again" in events
