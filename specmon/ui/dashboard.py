"""The live dashboard's wiring: a worker runs the server's session; its Views come as messages
and the widgets render them.

The command builds the session (`specmon.session.server_session`: `dashboard_session`, or a
`ServerSession` over a `specmon web` hub's feed, a replay's, a fleet's) and hands it in. The
session is its feed's sink, keeps the server's state, makes every baseline decision, keeps its
lasting history and says in the events log what happened to it (a recording stopped); the
dashboard hands each View it emits to the widgets (`ViewReady`) and its keys (`SpecmonApp`,
ui/app.py) turn into requests to it (docs/design.md §2). The I/O is the feed's
(`specmon.session.feed`): this process's own, or the one a `specmon web` hub shares between
browser tabs. Only message handlers touch widgets (docs/design.md §6).
"""

from __future__ import annotations

import asyncio
import io
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rich.console import Console
from textual import events, on, work
from textual.app import App, ComposeResult
from textual.containers import Grid
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.theme import Theme

from specmon.config import MonitorConfig
from specmon.errors import SpecmonError
from specmon.session.history_zoom import LIVE, ZoomLevel
from specmon.session.server_session import ServerSession
from specmon.session.view import View
from specmon.ui import tuning
from specmon.ui.messages import (
    HistoryNote,
    SessionFailed,
    ViewReady,
    ZoomRead,
)
from specmon.ui.theme_cycle import ThemeCycle
from specmon.ui.tuning.app_hooks import driver_class, start_upkeep, stop_upkeep
from specmon.ui.tuning.app_state import registered_theme, unhandled_exception
from specmon.ui.tuning.heap_keeper import HeapKeeper
from specmon.ui.widgets.baseline_panel import BaselinePanel
from specmon.ui.widgets.decode_panel import DecodePanel
from specmon.ui.widgets.events_log import EventsLog
from specmon.ui.widgets.gpu_panel import GpuPanel
from specmon.ui.widgets.identity_bar import IdentityBar
from specmon.ui.widgets.keys_line import KeysLine
from specmon.ui.widgets.server_panel import ServerPanel
from specmon.ui.widgets.spec_panel import SpecPanel

COMPACT_BELOW = 30  # rows: no big digits, one GPU line
TINY_BELOW = 20  # rows: the events log to its newest line, so the panels keep three lines each
TALL_FROM = 40  # rows: the bottom panels take their figures' height, the sparklines the rest
ZOOM_AGAIN_S = 30.0  # a zoomed span is read again this often (a 24 h column is 12 minutes)


@dataclass(frozen=True, slots=True)
class _Panels:
    """The dashboard's widgets that `refresh_view` hands the View to."""

    identity: IdentityBar
    decode: DecodePanel
    spec: SpecPanel
    baseline: BaselinePanel
    server: ServerPanel
    gpus: GpuPanel
    events: EventsLog


READ_ONLY_OFF = frozenset(("baseline", "snapshot", "dump", "toggle_probe"))
"""The keys that bench, save, relaunch or write files (`b`, `s`, `d`), and `p`, which pauses the
probe every tab of `specmon web` shares: off in a read-only dashboard."""


class Dashboard(App[None]):
    """specmon's live dashboard, without its keys (`SpecmonApp` adds them)."""

    CSS_PATH = "specmon.tcss"
    ENABLE_COMMAND_PALETTE = False  # every action has its key; `t` switches themes
    TITLE = "specmon"

    def __init__(
        self,
        session: ServerSession,
        *,
        config: MonitorConfig | None = None,
        read_only: bool = False,
        start_workers: bool = True,
        wall: Callable[[], float] | None = None,
    ) -> None:
        """Show `session`, which the command built (`dashboard_session`, a `specmon web` tab's
        over the hub's feed, a replay's, a fleet's first): the app runs it and renders its Views.

        Args:
            session: The server shown: its feed, state, baseline decisions and Views; its store
                is the dashboard's (`c`, `w`, `z`; None runs without saving, said in the log).
            config: The merged configuration, when not the session's (a fleet's: its servers').
            read_only: Turn off every key that benches, saves, relaunches or writes a file
                (`READ_ONLY_OFF`, and the comparison's exports), saying so on the keys line:
                `specmon web` for browsers it does not trust.
            start_workers: Run the session on mount (tests give the session its inputs).
            wall: Wall clock (default the session's; tests fix it).
        """
        self.tuning_notes = tuning.install()
        """The tunings of Textual's internals that stood down, for the events log."""
        self.themes = ThemeCycle(self, self.bench_running)
        """The themes `t` goes through (Textual's `__init__` asks for their variables)."""
        super().__init__()
        self.themes.register()
        self.config = config if config is not None else session.config
        self.start_workers = start_workers
        self.wall = wall if wall is not None else session.wall
        self.read_only = read_only
        self.session = session
        """The server shown: its state, its baseline decisions, its Views (`ViewReady`)."""
        session.on_view = self._view_ready
        self.heap = HeapKeeper()
        self._last_view: View | None = None
        self._panels: _Panels | None = None
        self.frozen = False
        """`f`: the screen keeps its frame while sampling and probing go on."""
        self.zoom = LIVE
        """`z`: the span the sparklines show."""
        self._zoom_read_at = 0.0
        self._verdicts_shown: tuple[ServerSession, int] = (session, session.verdict_changes)
        """The session shown and how many verdict changes it had (`show_view`): a new one
        rings the bell."""
        # Chosen before the stylesheet is first parsed: on mount it would be parsed and applied
        # again (~40 ms of the first frame).
        if self.config.theme in self.available_themes:
            self.theme = self.config.theme
        else:
            self.session.log(
                self.wall(), "warn", f"unknown theme {self.config.theme!r}", show=False
            )

    def compose(self) -> ComposeResult:
        """Identity line, four panels, the events log, the keys."""
        yield IdentityBar(id="identity")
        with Grid(id="panels"):
            yield DecodePanel(id="decode", classes="panel")
            yield SpecPanel(id="spec", classes="panel")
            yield BaselinePanel(id="baseline", classes="panel")
            yield ServerPanel(id="server", classes="panel")
        yield GpuPanel(id="gpus", classes="panel")
        yield EventsLog(id="events", classes="panel")
        yield KeysLine(id="keys", left_out=self.keys_off(), note=self._keys_note())

    def keys_off(self) -> frozenset[str]:
        """The actions whose keys are off here, left off the keys line."""
        return READ_ONLY_OFF if self.read_only else frozenset()

    def run_to_end(self) -> BaseException | None:
        """Run until the user quits (None) or an exception ends the dashboard (that exception).

        Textual reports a crash itself, after the app: a traceback with every frame's locals
        (which may hold a secret), and returns as on a quit. Its report goes nowhere here: the
        command reports the exception in one line (`specmon.cli.crash`).
        """
        self.error_console = Console(file=io.StringIO())
        try:
            self.run()
        except Exception as exc:  # raised at the start, before the app could catch it
            return exc
        return unhandled_exception(self)

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver; on Linux and macOS one that acts on Esc and q at once (installed)."""
        return driver_class(super().get_driver_class())

    @property
    def current_theme(self) -> Theme:
        """Textual's, without the copy of every registered theme that Textual's makes at each
        read (`available_themes`): it is read for every line drawn, ~4% of a repaint."""
        return registered_theme(self, self.theme) or super().current_theme

    def get_css_variables(self) -> dict[str, str]:
        """Textual's, with the app colours (`theming.css_variables`), made once a theme."""
        self.theme_variables = self.themes.variables(self.current_theme)
        return self.theme_variables

    def on_resize(self, event: events.Resize) -> None:
        """Size classes: below 30 rows no big digits (`-compact`), below 20 one event line
        (`-tiny`); from 40 the `-tall` layout."""
        self._size_classes(event.size.height)
        # The dashboard's screen, not the active one (`c`, `i`, `?` or the fleet table on top).
        dashboard = self.screen_stack[0]
        gpu, server = dashboard.query_one(GpuPanel), dashboard.query_one(ServerPanel)
        gpu.watch_view(gpu.view)
        server.watch_view(server.view)

    def _size_classes(self, height: int) -> None:
        # On the dashboard's screen, not the active one: a resize while `c`, `i` or `?` is open
        # would otherwise leave the dashboard laid out for the old size.
        dashboard = self.screen_stack[0]
        dashboard.set_class(height < COMPACT_BELOW, "-compact")
        dashboard.set_class(height < TINY_BELOW, "-tiny")
        dashboard.set_class(height >= TALL_FROM, "-tall")

    def on_mount(self) -> None:
        """Start the workers; SIGTERM and a lost terminal (SIGHUP) quit."""
        loop = asyncio.get_running_loop()
        for name in ("SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                loop.add_signal_handler(getattr(signal, name), self.exit)
        self._size_classes(self.size.height)
        self.say_at_start()
        if self.start_workers:
            self.call_after_refresh(self._start_workers)
        self.refresh_view()
        start_upkeep(self, self.heap)
        self.themes.start()

    def say_at_start(self) -> None:
        """The events log's first lines: what is watched, and how."""
        session = self.session
        session.log(self.wall(), "info", f"watching {session.url}", show=False)
        for note in self.tuning_notes:
            session.log(self.wall(), "warn", note, show=False)
        if self.config.insecure:
            session.log(self.wall(), "warn", "TLS verification is off (--insecure)", show=False)
        if not session.keeps_snapshots:
            said = "no snapshot store: baselines are not saved"
            session.log(self.wall(), "warn", said, show=False)
        recording = session.recording
        if recording is not None:
            said = f"recording to {recording.path}: specmon replay {recording.path} shows it again"
            session.log(self.wall(), "info", said, show=False)

    def on_unmount(self) -> None:
        """The garbage collector as it was (tests run many apps)."""
        self.session.close()  # its lasting history: what the writer holds is written
        stop_upkeep(self, self.heap)

    async def on_event(self, event: events.Event) -> None:
        """As Textual's; then a due full collection waits for the key's frames (`HeapKeeper`)."""
        await super().on_event(event)
        if isinstance(event, events.Key):
            self.heap.key()

    # The worker: it runs the session, whose Views come back as messages.

    def _start_workers(self) -> None:
        """Run the session (sampling, probing, its lasting history when it keeps one): after the
        first frame, which their first steps (httpx's deferred imports, psutil's scan of the
        machine's sockets) held back."""
        self._run_session()

    @work(group="feed", exit_on_error=False)
    async def _run_session(self) -> None:
        await self.crash_on_error(self.session.run())

    async def crash_on_error(self, run: Awaitable[None]) -> None:
        """Await a worker's `run`: what it raises crashes the dashboard (`SessionFailed`), as in
        a handler, rather than stopping the worker silently."""
        try:
            await run
        except Exception as exc:
            while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
                exc = exc.exceptions[0]  # the feed's task groups: the one error, not its wrapper
            self.post_message(SessionFailed(exc))

    def _view_ready(self, view: View) -> None:
        """The session's View after an input: to the widgets, by message."""
        self.post_message(ViewReady(view))

    def bench_running(self) -> bool:
        """Whether a bench is in progress (here or, under `specmon web`, from another tab)."""
        return self.session.bench_running

    # Handlers: the only code that touches widgets.

    @on(SessionFailed)
    def _on_session_failed(self, message: SessionFailed) -> None:
        raise message.error

    @on(ViewReady)
    def _on_view_ready(self, message: ViewReady) -> None:
        if self.zoom != LIVE and self.wall() - self._zoom_read_at >= ZOOM_AGAIN_S:
            self._read_zoom(self.zoom)
        if not self.frozen:
            self.show_view(message.view)

    @on(HistoryNote)
    def _on_history_note(self, message: HistoryNote) -> None:
        self.session.log(message.wall, message.level, message.text)

    def refresh_view(self) -> None:
        """Show the session's View now, after a key changed it (not while frozen: `f`)."""
        if self.frozen:
            return
        self.show_view(self.session.view())

    def show_view(self, view: View) -> None:
        """Hand each widget its part of the View; a verdict that changed since the last View
        shown (the session says it in the events log) rings the bell and flashes the Baseline
        panel."""
        if self._panels is None:  # found once: looking them up every tick was a DOM walk each
            try:
                self._panels = _Panels(
                    self.query_one(IdentityBar),
                    self.query_one(DecodePanel),
                    self.query_one(SpecPanel),
                    self.query_one(BaselinePanel),
                    self.query_one(ServerPanel),
                    self.query_one(GpuPanel),
                    self.query_one(EventsLog),
                )
            except NoMatches:  # not composed yet
                return
        panels = self._panels
        if not panels.identity.is_attached:  # quitting: a worker's last message came after
            return
        shown, changes = self._verdicts_shown
        now = (self.session, self.session.verdict_changes)
        self._verdicts_shown = now
        if shown is now[0] and now[1] > changes:  # not another server's (a fleet's)
            self.bell()
            panels.baseline.flash()
        # A server that is down keeps its last figures in view, dimmed and said to be the last
        # seen: not what it does now (the header says down).
        down = view.identity.state == "down"
        if panels.decode.has_class("-down") != down:
            panels.decode.set_class(down, "-down")
            panels.baseline.set_class(down, "-down")
            panels.decode.watch_view(view.decode)
        panels.identity.view = view.identity
        panels.decode.view = view.decode
        panels.decode.bench = view.bench
        panels.spec.view = view.spec
        panels.baseline.view = view.baseline
        panels.server.view = view.server
        panels.gpus.view = view.gpus
        panels.events.events = view.events
        self._last_view = view

    @work(group="zoom", exclusive=True, exit_on_error=False)
    async def _read_zoom(self, level: ZoomLevel) -> None:
        """Have the session read the span from the store (on a thread of its own)."""
        self._zoom_read_at = now = self.wall()
        try:
            zoomed = await self.session.read_zoom(level, now)
        except SpecmonError as exc:
            self.post_message(HistoryNote(now, "error", f"history: {exc}"))
        else:
            self.post_message(ZoomRead(zoomed))

    @on(ZoomRead)
    def _on_zoom_read(self, message: ZoomRead) -> None:
        if message.zoomed.level == self.zoom:  # not one `z` left behind
            self.session.show_zoomed(message.zoomed)
            self.refresh_view()

    def _keys_note(self) -> str:
        """What the keys line says after the keys: read-only, frozen."""
        return "  ".join(
            note for note, on in (("read-only", self.read_only), ("frozen", self.frozen)) if on
        )
