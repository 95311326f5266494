"""Issue 14: what each panel says and how the dashboard uses the screen."""

from __future__ import annotations

from collections.abc import Callable

from conftest import sample, server_info, server_metrics
from textual.widgets import ProgressBar, Static

from specmon.model import Telemetry
from specmon.session.snapshot import SnapshotKind
from specmon.session.view import BenchView
from specmon.ui.app import SpecmonApp
from specmon.ui.messages import BenchFailed, BenchProgress, SampleReady
from specmon.ui.screens.diagnostics import DiagnosticsScreen
from specmon.ui.widgets.baseline_panel import BaselinePanel
from specmon.ui.widgets.decode_panel import DecodePanel


async def test_diagnostics_name_an_unavailable_source(make_app: Callable[..., SpecmonApp]) -> None:
    """A GPU reading that answered "no NVML" is not "ok" on the `i` screen."""
    app = make_app()
    none = Telemetry("nvml", "NVML on this machine", unavailable="no NVML here", hint="run agent")
    async with app.run_test(size=(120, 40)) as pilot:
        tick = sample(1.0, server_info(), server_metrics("spec/metrics"), telemetry=none)
        app.post_message(SampleReady(tick))
        await pilot.pause()
        await pilot.press("i")
        assert isinstance(app.screen, DiagnosticsScreen)
        text = str(app.screen.query_one(Static).render())
        gpu = next(line for line in text.splitlines() if line.strip().startswith("gpu"))
        assert "unavailable: no NVML here; run agent" in gpu and "ok" not in gpu


async def test_snapshot_progress_is_not_a_baseline(make_app: Callable[..., SpecmonApp]) -> None:
    """`s` shows its runs on the Decode panel; the Baseline panel does not move."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.post_message(SampleReady(sample(1.0, server_info(), server_metrics("spec/metrics"))))
        await pilot.pause()
        app.post_message(BenchProgress(BenchView("snapshot", 2, 5, 8.0)))
        await pilot.pause()
        decode, baseline = app.query_one(DecodePanel), app.query_one(BaselinePanel)
        assert decode.border_subtitle == "snapshot run 2/5 · ETA 8s · Esc cancels"
        assert not baseline.border_subtitle and not baseline.query(ProgressBar)
        app.post_message(BenchFailed(SnapshotKind.RUN, "cancelled: nothing saved"))
        await pilot.pause()
        assert not decode.border_subtitle
