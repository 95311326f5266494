"""`specmon launch`'s dashboard: `b` relaunches the server without speculation for the
baseline, then brings the speculative server back; the baseline then applies."""

from __future__ import annotations

from pathlib import Path

from ab_helpers import info_of, managed, sims_left
from live_helpers import until

from specmon.config import MonitorConfig, Targets
from specmon.session.baselines import BaselineOrigin
from specmon.session.server_session import dashboard_session
from specmon.storage.store import Store
from specmon.ui.app import SpecmonApp


async def test_b_on_the_dashboard_relaunches_for_the_baseline(tmp_path: Path) -> None:
    server = managed(tmp_path)
    try:
        await server.start()
        config = MonitorConfig(
            url=server.target.url,
            interval=0.2,
            probe=False,
            baseline_runs=3,
            probe_tokens=48,
            read_timeout=2.0,
        )
        with Store(tmp_path / "db") as store:
            app = SpecmonApp(
                dashboard_session(config, Targets(server.target), store, managed=server)
            )
            async with app.run_test(size=(80, 24)) as pilot:
                await until(
                    pilot, lambda: app.session.live.server.info is not None
                )  # the feed runs
                await pilot.press("b")
                await until(pilot, lambda: app.session.live.baseline.snapshot is not None, 60)
                assert app.session.live.baseline.origin == BaselineOrigin.RELAUNCHED
                await until(pilot, lambda: not app.bench_running(), 60)

                def speculative_again() -> bool:
                    info = app.session.live.server.info
                    return (
                        app.session.live.server.info_current
                        and info is not None
                        and (info.speculative is not None)
                    )

                await until(pilot, speculative_again, 60)
                said = [e.text for e in app.session.live.events]
                validity = app.session.live.view(app.wall(), 3.0).baseline.validity
            # The events log says what the panel says (issue 25): the fresh baseline applies;
            # no "press b" that would only loop.
            assert validity is not None and validity.valid, validity
            assert not [e for e in said if "no longer applies" in e], said
            assert store.list()[0].server.speculative is None
            # Each step of the relaunch is a line of the events log, in order.
            steps = ["starting the baseline server", "the baseline server is up",
                     "benching the baseline", "starting the speculative server",
                     "the speculative server is up"]  # fmt: skip
            assert [e for e in said if e in steps] == steps, said
        assert (await info_of(server)).speculative is not None
    finally:
        server.stop()
    assert sims_left() == []
