"""`specmon --prometheus URL`: the fleet table fed from a Prometheus server's HTTP API.

The table is the direct fleet's (`FleetScreen`, the rows `FleetRow`), its rows built from
specmon's exporter series (session/prometheus_rows.py) by instant queries whatever the number
of servers: whether each is up and probing at the fleet's interval, the rest every 5 s
(session/prometheus_fleet.py). The highlighted row's history (the last 15 minutes of
its speedup, tok/s and accept length) is one range query when the cursor settles on it, read
again every `HISTORY_EVERY_S` while it stays, and drawn under the table (ui/row_history.py).
Enter ends the app with the server's URL (the exporter's `target` label): the command opens that
server's dashboard directly, and the table again when it is quit.
"""

from __future__ import annotations

import asyncio

import httpx
from textual import work
from textual.app import App
from textual.binding import Binding
from textual.theme import Theme

from specmon.session.fleet_row import FleetRow
from specmon.session.prometheus_fleet import PrometheusFleet
from specmon.ui.messages import FleetRowsReady
from specmon.ui.row_history import history_lines, spark_cells
from specmon.ui.screens.fleet import TABLE_KEYS, FleetScreen, TableChoice
from specmon.ui.theming import css_variables

HISTORY_SETTLE_S = 0.3
"""The cursor rests this long on a row before its history is read: a cursor passing over rows
(held ↓, PgDn) reads none of them."""
HISTORY_EVERY_S = 5.0
"""The highlighted row's history is read again this often while the cursor stays on it."""


class PrometheusFleetApp(App[str | None]):
    """The fleet table of the servers a Prometheus server holds specmon's series of."""

    CSS_PATH = "specmon.tcss"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("q", "quit", "quit")]

    def __init__(
        self,
        url: str,
        interval: float,
        *,
        choice: TableChoice | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        """Args:
        url: The Prometheus server (http://host:9090).
        interval: Seconds between two readings of the table.
        choice: The table's order and filter, kept from a visit before.
        client: Tests give theirs; else one to `url`, made on mount.
        """
        super().__init__()
        self.url = url.rstrip("/")
        self.interval = interval
        self.choice = choice if choice is not None else TableChoice()
        self._client = client
        self.rows: tuple[FleetRow, ...] = ()
        self.error: str | None = None
        """The latest reading's one-line error; None once one succeeds."""
        self.readings = 0
        """Readings done (tests wait on it)."""
        self._fleet: PrometheusFleet | None = None

    def get_css_variables(self) -> dict[str, str]:
        """Textual's, with the app colours the stylesheet names (`theming.css_variables`)."""
        theme: Theme | None = self.get_theme(self.theme)
        defaults = super().get_css_variables()
        return css_variables(theme, defaults) if theme is not None else defaults

    def on_mount(self) -> None:
        """The table, then its readings."""
        self.push_screen(FleetScreen(0, choice=self.choice, offered=TABLE_KEYS), self.exit)
        self._read()

    @work(group="prometheus", exit_on_error=False)
    async def _read(self) -> None:
        client = self._client or httpx.AsyncClient(base_url=self.url, timeout=10)
        fleet = self._fleet = PrometheusFleet(client, self.url)
        try:
            while True:
                await self.read_once(fleet)
                await asyncio.sleep(self.interval)
        finally:
            self._fleet = None
            if self._client is None:
                await client.aclose()

    def on_fleet_screen_highlighted(self, message: FleetScreen.Highlighted) -> None:
        """The cursor is on another server: its history, not the last one's."""
        self._follow(message.url)

    @work(group="history", exclusive=True, exit_on_error=False)
    async def _follow(self, url: str) -> None:
        """The history of the server the cursor is on, once it rests there, then every
        `HISTORY_EVERY_S` while it stays (a new highlight cancels this: `exclusive`)."""
        await asyncio.sleep(HISTORY_SETTLE_S)
        while True:
            screen, fleet = self.screen, self._fleet
            if not isinstance(screen, FleetScreen) or screen.highlighted() != url:
                return
            if fleet is not None:
                width = screen.history_width()
                history = await fleet.history(url, spark_cells(width))
                if isinstance(self.screen, FleetScreen):
                    self.screen.show_history(url, history_lines(history, width))
            await asyncio.sleep(HISTORY_EVERY_S)

    async def read_once(self, fleet: PrometheusFleet) -> None:
        """One reading: the rows to the table (or the error said)."""
        changed, before = self.readings == 0, self.error
        reading = await fleet.read()
        self.error = reading.error
        if reading.rows is not None:
            changed = changed or reading.rows != self.rows
            self.rows = reading.rows
        self.readings += 1
        self.sub_title = self.error or ""
        if self.error != before:  # said until it changes: the table may be empty meanwhile
            self.clear_notifications()
            if self.error is not None:
                self.notify(self.error, severity="error", timeout=24 * 3600)
        if changed and isinstance(self.screen, FleetScreen):  # rows as before: nothing to draw
            self.screen.post_message(FleetRowsReady(self.rows))
