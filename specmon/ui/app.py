"""The live dashboard: a worker runs the server's session; its Views come as messages and the
widgets render them.

The command builds the session (`specmon.session.server_session`: `dashboard_session`, or a
`ServerSession` over a `specmon web` hub's feed, a replay's, a fleet's) and hands it in. The
session is its feed's sink, keeps the server's state, makes every baseline decision, keeps its
lasting history and says in the events log what happened to it (a recording stopped); the app
hands each View it emits to the widgets (`ViewReady`) and turns keys into requests to it
(docs/design.md §2). The I/O is the feed's (`specmon.session.feed`): this process's own, or the
one a `specmon web` hub shares between browser tabs. Only message handlers touch widgets
(docs/design.md §6).
"""

from __future__ import annotations

import asyncio
import io
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.theme import Theme

from specmon.backend_facts import facts
from specmon.config import MonitorConfig, default_dumps_path
from specmon.errors import SpecmonError
from specmon.measure.snapshot import SnapshotKind
from specmon.session.history_zoom import LIVE, ZoomLevel, next_level
from specmon.session.server_session import ServerSession
from specmon.session.view import View
from specmon.ui import tuning
from specmon.ui.dump import dump_screen
from specmon.ui.messages import (
    HistoryNote,
    SessionFailed,
    ViewReady,
    ZoomRead,
)
from specmon.ui.screens.baseline_choice import BaselineChoice
from specmon.ui.screens.comparison import ComparisonScreen
from specmon.ui.screens.diagnostics import DiagnosticsScreen
from specmon.ui.screens.events import EventsScreen
from specmon.ui.screens.filter_prompt import FilterPrompt
from specmon.ui.screens.help import KEYS_AND_COMPARISON, HelpScreen, read_only
from specmon.ui.screens.label_prompt import LabelPrompt
from specmon.ui.screens.whatif import WhatIfScreen
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
from specmon.whatif.live import session_what_if

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


class SpecmonApp(App[None]):
    """specmon's live dashboard."""

    CSS_PATH = "specmon.tcss"
    ENABLE_COMMAND_PALETTE = False  # every action has its key; `t` switches themes
    TITLE = "specmon"
    BINDINGS = [
        Binding("b", "baseline", "baseline"),
        Binding("escape", "cancel_bench", "cancel", show=False),
        Binding("s", "snapshot", "snapshot"),
        Binding("c", "compare", "compare"),
        Binding("w", "whatif", "what-if"),
        Binding("p", "toggle_probe", "probe"),
        Binding("f", "freeze", "freeze"),
        Binding("z", "zoom", "zoom"),
        Binding("d", "dump", "dump"),
        Binding("slash", "filter_events", "filter"),
        Binding("l", "all_events", "log", show=False),  # the panel's title says it
        Binding("t", "next_theme", "theme"),
        Binding("i", "diagnostics", "why —"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        # What htop, btop, k9s and nvitop users press: F1 or h for help, F10 or Ctrl-C to quit
        # (Textual's Ctrl-C only said "press ctrl+q to quit").
        Binding("h,f1", "help", "help", show=False),
        Binding("f10", "quit", "quit", show=False),
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
    ]

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

    # Actions (keys).

    def _refuse_read_only(self, key: str, does: str = "benches or saves") -> bool:
        """Whether `key` is off here (read-only), said when it is (with what it `does`)."""
        if self.read_only:
            self.notify(
                f"read-only: {key} is off in this dashboard (it {does})", severity="warning"
            )
        return self.read_only

    def action_baseline(self) -> None:
        """b: a fresh baseline from the baseline server, or this server when it runs plain."""
        if self._refuse_read_only("b"):
            return
        if self.bench_running():
            self.notify("a bench is already running (Esc cancels it)", severity="warning")
            return
        session = self.session
        origin, info = session.baseline_origin(), session.server_info
        if origin is not None:
            session.take_baseline(origin)
        elif info is None:
            self.notify(
                "the server has not answered yet, so specmon cannot tell whether it "
                "runs with speculation: press b once it is up, or give --baseline-url",
                severity="warning",
            )
        else:  # it runs with speculation: wait for it to come back without, or quit
            choice = BaselineChoice(
                session.url, facts(info.backend).speculative_flags, self.baseline_server_hint()
            )
            self.push_screen(choice, self._on_choice)
        self.refresh_view()

    def baseline_server_hint(self) -> str:
        """How to give specmon a baseline server, in the `b` dialog (markup)."""
        return "quit and start specmon with [bold]--baseline-url URL[/]"

    def _on_choice(self, wait: bool | None) -> None:
        if wait:
            self.session.wait_for_plain()
            self.refresh_view()

    def action_cancel_bench(self) -> None:
        """Esc: cancel a bench in progress (nothing is saved) or stop waiting."""
        if not self.session.cancel_bench():
            self.notify("the snapshot is being saved: too late to cancel", severity="warning")
        self.refresh_view()

    def action_snapshot(self) -> None:
        """s: snapshot the current configuration as a labelled run."""
        if self._refuse_read_only("s"):
            return
        if self.bench_running():
            self.notify("a bench is already running (Esc cancels it)", severity="warning")
            return

        def start(label: str | None) -> None:
            if label is None:
                return
            self.session.start_bench(SnapshotKind.RUN, self.session.url, None, label or None)
            self.refresh_view()

        self.push_screen(LabelPrompt(), start)

    def action_compare(self) -> None:
        """c: every snapshot of this target, compared with its matched baseline."""
        session = self.session
        config = session.config
        urls = [config.url] + ([config.baseline_url] if config.baseline_url else [])
        self.push_screen(
            ComparisonScreen(
                session.stored_snapshots if session.keeps_snapshots else None,
                urls,
                config.max_age,
                self.wall,
                session.known_lifetimes(),
                exports=not self.read_only,
                prompts=config.probe_prompts,
                check=self.session.stored_lifetimes,
                no_store=(
                    "a replay reads no snapshot store: the recorded dashboard's snapshots are in "
                    "its store (`specmon snapshots export` where it ran shows this table)"
                    if session.replay
                    else "no snapshot store: snapshots are not kept (see the events log)"
                ),
            )
        )

    def action_whatif(self) -> None:
        """w: the recent probes at other draft lengths, and the advisor's findings."""
        self._open_what_if(self.session)

    def _open_what_if(self, session: ServerSession) -> None:
        """The what-if screen of one server's session."""
        self.push_screen(WhatIfScreen(session_what_if(session, self.wall())))

    def action_toggle_probe(self) -> None:
        """p: pause or resume the probe."""
        if self._refuse_read_only("p", "pauses the probe every viewer shares"):
            return
        self.session.pause_probe(not self.session.probe_is_paused)
        self.refresh_view()

    def action_freeze(self) -> None:
        """f: freeze the screen (sampling and probing go on), or show the present again."""
        session = self.session
        if self.frozen:
            self.frozen = False
            session.log(self.wall(), "info", "screen resumed", show=False)
            self.refresh_view()
        else:
            said = "screen frozen: sampling goes on; f resumes"
            session.log(self.wall(), "info", said, show=False)
            self.refresh_view()  # the frame it keeps says so
            self.frozen = True
        self.screen_stack[0].query_one(KeysLine).set_note(self._keys_note())

    def action_zoom(self) -> None:
        """z: the sparklines' span, 5 min → 1 h → 24 h → all → 5 min (the store's history)."""
        session = self.session
        if not session.keeps_snapshots:
            session.log(self.wall(), "warn", "no store: no history to zoom into", show=False)
            self.refresh_view()
            return
        self.zoom = next_level(self.zoom)
        session.log(self.wall(), "info", f"sparklines: {self.zoom.label} (z)", show=False)
        if self.zoom == LIVE:
            session.show_zoomed(None)
            self.refresh_view()
        else:
            self._read_zoom(self.zoom)

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

    def action_filter_events(self) -> None:
        """/: show only the events holding a text."""
        log = self.screen_stack[0].query_one(EventsLog)

        def apply(text: str | None) -> None:
            if text is not None:
                log.filter = text

        self.push_screen(FilterPrompt("the events holding", log.filter), apply)

    def action_all_events(self) -> None:
        """l: every event kept, wrapped whole and scrollable (the panel shows the newest few)."""
        log = self.screen_stack[0].query_one(EventsLog)
        self.push_screen(EventsScreen(log.events, log.filter))

    def _keys_note(self) -> str:
        """What the keys line says after the keys: read-only, frozen."""
        return "  ".join(
            note for note, on in (("read-only", self.read_only), ("frozen", self.frozen)) if on
        )

    def action_dump(self) -> None:
        """d: the screen as it is, as SVG and text, into the dumps folder (said in the log)."""
        if self._refuse_read_only("d", "writes files"):
            return
        folder = Path(self.config.dumps).expanduser() if self.config.dumps else default_dumps_path()
        try:
            svg, text = dump_screen(self, folder, self.wall())
        except OSError as exc:
            said = f"screen dump failed: {folder}: {exc.strerror or exc}"
            self.session.log(self.wall(), "error", said, show=False)
        else:
            also = f"and {text.name}" if text else "no text dump on this Textual"
            said = f"screen dumped: {svg} ({also})"
            self.session.log(self.wall(), "info", said, show=False)
        if self.frozen:  # the log is not redrawn: said on top of the frozen frame
            self.notify(said)
        self.refresh_view()

    def action_next_theme(self) -> None:
        """t: the next theme."""
        self.theme = self.themes.after(self.theme)
        # Said in the events log, which the theme's own repaint draws: a toast would be a
        # second frame after it (Textual mounts it later), 25-40 ms more at 160x50.
        self.session.log(self.wall(), "info", f"theme: {self.theme}", show=False)
        self.refresh_view()

    def action_help(self) -> None:
        """?: what every number means; a read-only view marks the keys it turned off."""
        self.push_help("help", KEYS_AND_COMPARISON)

    def push_help(self, name: str, keys: tuple[tuple[str, str], ...]) -> None:
        """Open the help screen `name` listing `keys`, built once and kept (its page renders
        once); a read-only view's lists its bench, save and file keys as off."""
        name = f"{name}-read-only" if self.read_only else name
        if not self.is_screen_installed(name):
            self.install_screen(HelpScreen(read_only(keys) if self.read_only else keys), name)
        self.push_screen(name)

    def action_diagnostics(self) -> None:
        """i: each source's age and last error, and why each "—" is missing."""
        if self._last_view is not None:
            self.push_screen(DiagnosticsScreen(self._last_view))
