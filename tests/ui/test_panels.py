"""Issue 14: what each panel says and how the dashboard uses the screen."""

from __future__ import annotations

from collections.abc import Callable

from conftest import sample, server_info, server_metrics
from textual.widgets import Static

from specmon.model import Telemetry
from specmon.ui.app import SpecmonApp
from specmon.ui.messages import SampleReady
from specmon.ui.screens.diagnostics import DiagnosticsScreen


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
