"""The live dashboard's keys: each one a request to the session shown, or a screen over the
dashboard.

`SpecmonApp` is the dashboard (`Dashboard`, ui/dashboard.py: the session run by a worker, its
Views handed to the widgets) with its keys; the fleet's and the replay's apps change some of
them. A key asks the session (take a baseline, bench a snapshot, pause the probe, read a zoomed
span) and shows its View again at once; the screens it opens (`c`, `w`, `i`, `?`, `l`) are
handed what they show. A read-only dashboard (`specmon web` for browsers it does not trust)
says so for each key that would bench, save or write a file.
"""

from __future__ import annotations

from textual.binding import Binding

from specmon.backend_facts import facts
from specmon.measure.snapshot import SnapshotKind
from specmon.session.history_zoom import LIVE, next_level
from specmon.session.server_session import ServerSession
from specmon.ui.dashboard import Dashboard
from specmon.ui.dump import dump_screen
from specmon.ui.screens.baseline_choice import BaselineChoice
from specmon.ui.screens.comparison import ComparisonScreen
from specmon.ui.screens.diagnostics import DiagnosticsScreen
from specmon.ui.screens.events import EventsScreen
from specmon.ui.screens.filter_prompt import FilterPrompt
from specmon.ui.screens.help import KEYS_AND_COMPARISON, HelpScreen, read_only
from specmon.ui.screens.label_prompt import LabelPrompt
from specmon.ui.screens.whatif import WhatIfScreen
from specmon.ui.widgets.events_log import EventsLog
from specmon.ui.widgets.keys_line import KeysLine
from specmon.whatif.live import session_what_if


class SpecmonApp(Dashboard):
    """specmon's live dashboard."""

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
        self.push_screen(
            ComparisonScreen(
                session.stored_snapshots if session.keeps_snapshots else None,
                config.compared_urls,
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

    def action_dump(self) -> None:
        """d: the screen as it is, as SVG and text, into the dumps folder (said in the log)."""
        if self._refuse_read_only("d", "writes files"):
            return
        folder = self.config.dumps_folder
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
