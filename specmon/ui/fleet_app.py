"""The dashboard of several servers: the fleet table first, Enter opens one server's dashboard.

`FleetApp` is the single-server `SpecmonApp` over a `Fleet` of sessions (session/fleet.py) run
in one worker, each server's the same `ServerSession` a lone server's dashboard runs. The
dashboard below the fleet table shows the chosen server's session: its Views come to the app
(`ViewReady`) and its keys (b, s, c, p, i, ?) go to it, as on a lone server; Esc, with nothing
to cancel, goes back to the table. The app is the single-server one so that the dashboard's
screen, keys and rendering are one code; only which session it shows changes (`_select`).
Each tick the app builds every server's row and hands them to the table by message.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual import work

from specmon.config import MonitorConfig
from specmon.session.fleet import Fleet
from specmon.session.fleet_row import fleet_row, server_label, worst_first
from specmon.session.server_session import ServerSession
from specmon.storage.store import Store
from specmon.ui.app import SpecmonApp
from specmon.ui.messages import FleetRowsReady
from specmon.ui.screens.fleet import FleetScreen
from specmon.ui.screens.help import FLEET_KEYS

DASHBOARD_ACTIONS = frozenset(
    {"baseline", "snapshot", "compare", "toggle_probe", "diagnostics", "cancel_bench", "zoom"}
)
"""Keys of one server's dashboard: on the fleet table they would act on a server not shown."""


class FleetApp(SpecmonApp):
    """specmon's dashboard of several servers."""

    def __init__(
        self,
        config: MonitorConfig,
        fleet: Fleet,
        store: Store | None,
        *,
        start_workers: bool = True,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """Args:
        config: The merged configuration (`config.fleet`: the servers).
        fleet: A session per server, built with the same config and store.
        store: The snapshot store; None runs without saving.
        start_workers: Run the fleet on mount (tests feed the sessions instead).
        wall: Wall clock.
        """
        self.fleet = fleet
        super().__init__(
            config, None, store, start_workers=start_workers, wall=wall, session=fleet.sessions[0]
        )
        self.session.on_view = None  # the table comes first

    def _select(self, session: ServerSession) -> None:
        """The dashboard shows this server from now on: its Views come to the app."""
        if session is not self.session:
            self.session.on_view = None
            self.session = session
            self._last_view = None
            self._shown_verdict = None  # another server's verdict is no flip of this one's
        session.on_view = self._view_ready

    def on_mount(self) -> None:
        """The fleet table on top of the dashboard; rows every sampling interval."""
        self.push_screen(FleetScreen(len(self.fleet.sessions)), self._open)
        self.set_interval(max(self.config.interval, 1.0), self.tick)
        self.call_after_refresh(self.tick)

    def _start_workers(self) -> None:
        self._run_fleet()

    @work(group="fleet", exit_on_error=False)
    async def _run_fleet(self) -> None:
        await self.fleet.run()

    def tick(self) -> None:
        """Hand the table every server's row (not while frozen: `f`, nor once the app is
        closing: its timer can fire after the last screen is gone)."""
        if self.frozen or not self.screen_stack or not isinstance(self.screen, FleetScreen):
            return
        rows = worst_first(fleet_row(server_label(s.target), s.view()) for s in self.fleet.sessions)
        self.screen.post_message(FleetRowsReady(tuple(rows)))

    def _open(self, url: str | None) -> None:
        session = self.fleet.get(url) if url else None
        if session is None:
            return
        self._select(session)
        self.refresh_view()

    def action_cancel_bench(self) -> None:
        """Esc: cancel a bench or stop waiting, as on a lone server; else back to the table."""
        if self.session.live.baseline.waiting or self.bench_running():
            super().action_cancel_bench()
            return
        self.session.on_view = None  # the table's rows come by `tick`
        self.push_screen(FleetScreen(len(self.fleet.sessions), frozen=self.frozen), self._open)
        self.tick()

    def action_freeze(self) -> None:
        """f: as on a lone server; the table too."""
        super().action_freeze()
        if isinstance(self.screen, FleetScreen):
            self.screen.show_frozen(self.frozen)
        self.tick()

    def action_whatif(self) -> None:
        """w: on the table, the what-if of the highlighted server; else of the one shown."""
        if isinstance(self.screen, FleetScreen):
            session = self.fleet.get(self.screen.highlighted() or "")
            if session is not None:
                self._open_what_if(session.live)
            return
        super().action_whatif()

    def action_help(self) -> None:
        """?: on the table, its own keys; else the dashboard's."""
        if isinstance(self.screen, FleetScreen):
            self.push_help("fleet-help", FLEET_KEYS)
            return
        super().action_help()

    def baseline_server_hint(self) -> str:
        """A fleet's targets name their baseline servers in the config file (--baseline-url is
        one server's: refused with several --url)."""
        return (
            "give this target a [bold]baseline_url[/] in its \\[\\[targets]] table of the config "
            "file (--baseline-url names one server's; with several --url it is refused) and "
            "start specmon again: the URL"
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """On the fleet table the keys of one server's dashboard do nothing."""
        if isinstance(self.screen, FleetScreen) and action in DASHBOARD_ACTIONS:
            return False
        return super().check_action(action, parameters)
