"""The dashboard of several servers: the fleet table first, Enter opens one server's dashboard.

`FleetApp` is the single-server `SpecmonApp` over a `Fleet` of sessions (session/fleet.py) run
in one worker, each server's the same `ServerSession` a lone server's dashboard runs. The
dashboard below the fleet table shows the chosen server's session: its Views come to the app
(`ViewReady`) and its keys (b, s, c, p, i, ?) go to it, as on a lone server; Esc, with nothing
to cancel, goes back to the table. The app is the single-server one so that the dashboard's
screen, keys and rendering are one code; only which session it shows changes (`_select`).
Every session hands the app its View after each input: its row of the table (`fleet_row`) is
kept, and the rows go to the table by message; the shown server's View goes to the dashboard.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from textual import work

from specmon.config import MonitorConfig
from specmon.session.fleet import Fleet
from specmon.session.fleet_row import FleetRow, fleet_row, server_label, worst_first
from specmon.session.server_session import ServerSession
from specmon.session.view import View
from specmon.ui.app import SpecmonApp
from specmon.ui.messages import FleetRowsReady
from specmon.ui.screens.fleet import FleetScreen, TableChoice
from specmon.ui.screens.help import FLEET_KEYS

DASHBOARD_ACTIONS = frozenset(
    {
        "baseline",
        "snapshot",
        "compare",
        "toggle_probe",
        "diagnostics",
        "cancel_bench",
        "zoom",
        "all_events",
    }
)
"""Keys of one server's dashboard: on the fleet table they would act on a server not shown."""


class FleetApp(SpecmonApp):
    """specmon's dashboard of several servers."""

    def __init__(
        self,
        config: MonitorConfig,
        fleet: Fleet,
        *,
        start_workers: bool = True,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """Args:
        config: The merged configuration (`config.fleet`: the servers).
        fleet: A session per server, built by the command with the same config and store (the
            snapshot store is theirs; None runs without saving).
        start_workers: Run the fleet on mount (tests feed the sessions instead).
        wall: Wall clock.
        """
        self.fleet = fleet
        super().__init__(fleet.sessions[0], config=config, start_workers=start_workers, wall=wall)
        self._table_choice = TableChoice()
        """The table's order, filter and last server opened, kept across visits."""
        self._rows: dict[str, FleetRow] = {}
        """Each server's row, from its latest View."""
        for session in fleet.sessions:
            session.on_view = partial(self._session_view, session)

    def _session_view(self, session: ServerSession, view: View) -> None:
        """A session's View after an input: its row to the table, or, for the server shown, the
        View to the dashboard."""
        self._rows[session.url] = fleet_row(server_label(session.target), view)
        if self.screen_stack and isinstance(self.screen, FleetScreen):
            self.show_rows()
        elif session is self.session:
            self._view_ready(view)

    def _select(self, session: ServerSession) -> None:
        """The dashboard shows this server from now on."""
        if session is not self.session:
            self.session = session
            self._last_view = None

    def on_mount(self) -> None:
        """The fleet table on top of the dashboard."""
        self.push_screen(
            FleetScreen(len(self.fleet.sessions), choice=self._table_choice), self._open
        )
        self.call_after_refresh(self.show_rows)

    def _start_workers(self) -> None:
        self._run_fleet()

    @work(group="fleet", exit_on_error=False)
    async def _run_fleet(self) -> None:
        await self.crash_on_error(self.fleet.run())

    def show_rows(self) -> None:
        """Hand the table every server's row, worst first (not while frozen: `f`); a server no
        View has come from yet is asked for one."""
        if self.frozen or not self.screen_stack or not isinstance(self.screen, FleetScreen):
            return
        for session in self.fleet.sessions:
            if session.url not in self._rows:
                self._rows[session.url] = fleet_row(server_label(session.target), session.view())
        self.screen.post_message(FleetRowsReady(tuple(worst_first(self._rows.values()))))

    def _open(self, url: str | None) -> None:
        session = self.fleet.get(url) if url else None
        if session is None:
            return
        self._select(session)
        self.refresh_view()

    def action_cancel_bench(self) -> None:
        """Esc: cancel a bench or stop waiting, as on a lone server; else back to the table."""
        if self.session.waiting_for_plain_server or self.bench_running():
            super().action_cancel_bench()
            return
        table = FleetScreen(len(self.fleet.sessions), frozen=self.frozen, choice=self._table_choice)
        self.push_screen(table, self._open)
        self.show_rows()

    def action_freeze(self) -> None:
        """f: as on a lone server; the table too."""
        super().action_freeze()
        if isinstance(self.screen, FleetScreen):
            self.screen.show_frozen(self.frozen)
        self.show_rows()

    def action_whatif(self) -> None:
        """w: on the table, the what-if of the highlighted server; else of the one shown."""
        if isinstance(self.screen, FleetScreen):
            session = self.fleet.get(self.screen.highlighted() or "")
            if session is not None:
                self._open_what_if(session)
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
