"""The live dashboard: workers sample, probe and bench; handlers feed LiveState; widgets render.

Workers do I/O and post messages; only message handlers touch widgets (DESIGN.md §6).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.css.query import NoMatches
from textual.driver import Driver

from specmon.analysis.figures import run_figures
from specmon.analysis.live import LiveState
from specmon.analysis.validity import fingerprint
from specmon.analysis.view import View
from specmon.bench import Progress, run_bench
from specmon.config import MonitorConfig, Targets
from specmon.errors import SpecmonError
from specmon.heap import freeze_long_lived, release_freed_memory, thaw
from specmon.model import Protocol, ServerInfo
from specmon.sources.backend import Connection
from specmon.sources.http import Target, make_client
from specmon.sources.probe import DEFAULT_PROMPT
from specmon.sources.sampler import PollSource, Sampler
from specmon.sources.telemetry import open_telemetry
from specmon.store import Store
from specmon.ui.driver import prompt_driver
from specmon.ui.messages import (
    BaselineSampleReady,
    BenchDone,
    BenchFailed,
    BenchProgress,
    ProbeDone,
    ProbeFailed,
    SampleReady,
)
from specmon.ui.screens.baseline_choice import BaselineChoice
from specmon.ui.screens.comparison import ComparisonScreen
from specmon.ui.screens.diagnostics import DiagnosticsScreen
from specmon.ui.screens.help import HelpScreen
from specmon.ui.screens.label_prompt import LabelPrompt
from specmon.ui.theming import APP_VARIABLES, load_themes
from specmon.ui.widgets.baseline_panel import BaselinePanel
from specmon.ui.widgets.decode_panel import DecodePanel
from specmon.ui.widgets.events_log import EventsLog
from specmon.ui.widgets.gpu_panel import GpuPanel
from specmon.ui.widgets.identity_bar import IdentityBar
from specmon.ui.widgets.keys_line import KeysLine
from specmon.ui.widgets.server_panel import ServerPanel
from specmon.ui.widgets.spec_panel import SpecPanel

TRIM_EVERY_S = 10.0  # specmon/heap.py: a trim takes under 1 ms
INFO_EVERY_S = 5.0  # server info is large (31 KB on 0.5.17) and changes only across restarts


class SpecmonApp(App[None]):
    """specmon's live dashboard."""

    CSS_PATH = "specmon.tcss"
    ENABLE_COMMAND_PALETTE = False  # every action has its key; `t` switches themes
    TITLE = "specmon"
    SCREENS = {"help": HelpScreen}  # built on the first `?` and kept: its page renders once
    BINDINGS = [
        Binding("b", "baseline", "baseline"),
        Binding("escape", "cancel_bench", "cancel", show=False),
        Binding("s", "snapshot", "snapshot"),
        Binding("c", "compare", "compare"),
        Binding("p", "toggle_probe", "probe"),
        Binding("t", "next_theme", "theme"),
        Binding("i", "diagnostics", "why —"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self,
        config: MonitorConfig,
        targets: Targets,
        store: Store | None,
        *,
        auto_baseline: bool = False,
        start_workers: bool = True,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """Build the app.

        Args:
            config: The merged configuration.
            targets: The monitored server and the optional baseline server.
            store: The snapshot store; None runs without saving (said in the log).
            auto_baseline: Take a baseline as soon as the server is known (the demo).
            start_workers: Start sampling and probing on mount (tests push messages instead).
            wall: Wall clock (tests fix it).
        """
        super().__init__()
        self.config = config
        self.targets = targets
        self.store = store
        self.auto_baseline = auto_baseline
        self.start_workers = start_workers
        self.wall = wall
        self.probe_protocol = Protocol(5, 0, config.probe_tokens, 0.0, DEFAULT_PROMPT)
        self.bench_protocol = Protocol(config.baseline_runs, 1, config.probe_tokens, 0.0,
                                       DEFAULT_PROMPT)  # fmt: skip
        self.live = LiveState(config.url, self.probe_protocol, max_age_s=config.max_age,
                              probe_every=config.probe_every)  # fmt: skip
        self.live.probe_enabled = config.probe
        self.server: Connection | None = None
        self._looked_up_baseline = False
        self._bench_on_server = False
        self._saving = False  # a bench is writing its snapshot: too late to cancel it
        self._theme_names: list[str] = []
        self._last_view: View | None = None
        # Chosen before the stylesheet is first parsed: on mount it would be parsed and applied
        # again (~40 ms of the first frame).
        for theme in load_themes():
            self.register_theme(theme)
            self._theme_names.append(theme.name)
        self._theme_names += ["textual-dark", "textual-light", "nord", "gruvbox"]
        if self.config.theme in self.available_themes:
            self.theme = self.config.theme
        else:
            self.live.log(self.wall(), "warn", f"unknown theme {self.config.theme!r}")

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
        yield KeysLine(id="keys")

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver; on Linux and macOS one that acts on Esc and q at once."""
        return prompt_driver(super().get_driver_class())

    def get_css_variables(self) -> dict[str, str]:
        """App colours follow the theme's semantic colours unless the theme sets them."""
        variables = super().get_css_variables()
        for name, base in APP_VARIABLES.items():
            variables.setdefault(name, variables[base])
        return variables

    def on_resize(self, event: events.Resize) -> None:
        """Below 30 rows, drop the big digits so the panels keep their lines."""
        self.screen.set_class(event.size.height < 30, "-compact")
        self.query_one(GpuPanel).watch_view(self.query_one(GpuPanel).view)

    def on_mount(self) -> None:
        """Start the workers; SIGTERM and a lost terminal (SIGHUP) quit."""
        loop = asyncio.get_running_loop()
        for name in ("SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                loop.add_signal_handler(getattr(signal, name), self.exit)
        self.screen.set_class(self.size.height < 30, "-compact")
        self.live.log(self.wall(), "info", f"watching {self.config.url}")
        if self.config.insecure:
            self.live.log(self.wall(), "warn", "TLS verification is off (--insecure)")
        if self.store is None:
            self.live.log(self.wall(), "warn", "no snapshot store: baselines are not saved")
        if self.start_workers:
            self.call_after_refresh(self._start_workers)
        self.refresh_view()
        self.call_after_refresh(freeze_long_lived)
        self.set_interval(TRIM_EVERY_S, release_freed_memory)

    def on_unmount(self) -> None:
        """The frozen objects go back to the garbage collector (tests run many apps)."""
        thaw()

    # Workers: I/O only, results go out as messages.

    def _start_workers(self) -> None:
        """Sample, and probe unless it is off: after the first frame, which their first steps
        (httpx's deferred imports, psutil's scan of the machine's sockets) held back."""
        self._sample_server()
        if self.targets.baseline is not None:
            self._sample_baseline_server()
        if self.config.probe:
            self._probe_loop()

    @work(group="sampler", exit_on_error=False)
    async def _sample_server(self) -> None:
        async with make_client(self.targets.server) as client:
            self.server = Connection(client)
            sources = self._sources(self.server)
            try:
                telemetry = await open_telemetry(
                    self.config.url, gpu_metrics=self.config.gpu_metrics
                )
            except SpecmonError as exc:
                self.post_message(ProbeFailed(self.wall(), f"GPU telemetry: {exc}"))
                telemetry = None
            if telemetry is not None:
                sources.append(PollSource("gpu", telemetry.read, self.config.interval))
            sampler = Sampler(sources, interval=self.config.interval)
            try:
                await sampler.run(lambda sample: self.post_message(SampleReady(sample)))
            finally:
                if telemetry is not None:
                    await telemetry.aclose()

    @work(group="baseline-sampler", exit_on_error=False)
    async def _sample_baseline_server(self) -> None:
        assert self.targets.baseline is not None
        async with make_client(self.targets.baseline) as client:
            connection = Connection(client)
            sampler = Sampler(self._sources(connection), interval=max(self.config.interval, 2.0))
            await sampler.run(lambda sample: self.post_message(BaselineSampleReady(sample)))

    def _sources(self, connection: Connection) -> list[PollSource]:
        return [
            PollSource("info", connection.info, max(INFO_EVERY_S, self.config.interval)),
            PollSource("metrics", connection.metrics, self.config.interval),
        ]

    @work(group="probe", exit_on_error=False)
    async def _probe_loop(self) -> None:
        while True:
            server = self.server
            busy = self.workers_in_group("bench") and self._bench_on_server
            if server is not None and not self.live.probe_paused and not busy:
                try:
                    result = await server.probe(prompt=DEFAULT_PROMPT,
                                                max_tokens=self.config.probe_tokens)  # fmt: skip
                except SpecmonError as exc:
                    self.post_message(ProbeFailed(self.wall(), str(exc)))
                else:
                    figures = run_figures(result)
                    self.post_message(ProbeDone(self.wall(), time.monotonic(), figures, result))
            await asyncio.sleep(self.config.probe_every)

    def workers_in_group(self, group: str) -> bool:
        """Whether a worker of `group` is running."""
        return any(w.group == group and w.is_running for w in self.workers)

    @work(group="bench", exclusive=True, exit_on_error=False)
    async def _bench(self, kind: str, target: Target, origin: str, label: str | None) -> None:
        protocol = self.bench_protocol
        started = time.monotonic()

        def progress(p: Progress) -> None:
            if p.phase != "run":
                return
            per_run = (time.monotonic() - started) / (p.index + protocol.warmup)
            self.post_message(BenchProgress(p.index, p.total, per_run * (p.total - p.index)))

        self._bench_on_server = target is self.targets.server
        try:
            async with make_client(target) as client:
                connection = Connection(client)
                info = await connection.info()
                assert connection.backend is not None
                if kind == "baseline" and info.speculative is not None:
                    raise SpecmonError(
                        f"{target.url} runs with speculation ({info.speculative.describe()}): "
                        "not a baseline"
                    )
                snapshot = await run_bench(client, connection.backend, target.url, info,
                                           protocol, label=label, on_progress=progress)  # fmt: skip
            store = self.store
            if store is None:
                raise SpecmonError("no snapshot store: the result cannot be saved")
            # Off the event loop: a write waits up to the store's timeout for another process's
            # lock, and the keys must answer meanwhile.
            self._saving = True
            saved = await asyncio.to_thread(lambda: store.get(store.save(snapshot)))
        except SpecmonError as exc:
            self.post_message(BenchFailed(kind, str(exc)))
        except asyncio.CancelledError:
            self.post_message(BenchFailed(kind, "cancelled: nothing saved"))
            raise
        else:
            self.post_message(BenchDone(saved, kind, origin))
        finally:
            self._bench_on_server = self._saving = False

    # Handlers: the only code that touches widgets.

    @on(SampleReady)
    def _on_sample(self, message: SampleReady) -> None:
        self.live.on_sample(message.sample)
        info = self.live.server.info
        if info is not None:
            self._maybe_load_baseline(info)
            self._maybe_take_waited_baseline(info)
        self.refresh_view()

    @on(BaselineSampleReady)
    def _on_baseline_sample(self, message: BaselineSampleReady) -> None:
        self.live.on_baseline_sample(message.sample)
        self.refresh_view()

    @on(ProbeDone)
    def _on_probe(self, message: ProbeDone) -> None:
        self.live.on_probe(message.wall, message.t, message.figures, message.result)
        self.refresh_view()

    @on(ProbeFailed)
    def _on_probe_failed(self, message: ProbeFailed) -> None:
        self.live.on_probe_error(message.wall, message.error)
        self.refresh_view()

    @on(BenchProgress)
    def _on_bench_progress(self, message: BenchProgress) -> None:
        self.live.baseline_progress = (message.done, message.total, message.eta_s)
        self.refresh_view()

    @on(BenchDone)
    def _on_bench_done(self, message: BenchDone) -> None:
        self.live.baseline_progress = None
        snapshot = message.snapshot
        if message.kind == "baseline":
            self.live.set_baseline(self.wall(), snapshot, message.origin)
            if message.origin.startswith("this server"):
                self.live.log(self.wall(), "warn", "baseline taken: now restart the server WITH "
                              "speculation; the comparison follows")  # fmt: skip
        else:
            self.live.log(self.wall(), "info", f"snapshot #{snapshot.id} saved"
                          + (f" ({snapshot.label})" if snapshot.label else ""))  # fmt: skip
        self.refresh_view()

    @on(BenchFailed)
    def _on_bench_failed(self, message: BenchFailed) -> None:
        self.live.baseline_progress = None
        self.live.log(self.wall(), "error", f"{message.kind} failed: {message.error}")
        self.refresh_view()

    def _maybe_load_baseline(self, info: ServerInfo) -> None:
        if self._looked_up_baseline or self.store is None or self.live.baseline is not None:
            return
        self._looked_up_baseline = True
        try:
            found = self.store.latest_baseline(fingerprint(info.args), self.probe_protocol)
        except SpecmonError as exc:
            self.live.log(self.wall(), "error", f"store: {exc}")
            return
        if found is not None:
            self.live.set_baseline(self.wall(), found, f"from the store ({found.url})")
        elif self.auto_baseline:
            self.action_baseline()

    def _maybe_take_waited_baseline(self, info: ServerInfo) -> None:
        if not self.live.waiting_for_baseline or info.speculative is not None:
            return
        if self.workers_in_group("bench"):
            return
        self.live.waiting_for_baseline = False
        self.live.log(self.wall(), "info", "the server is back without speculation: "
                      "taking the baseline")  # fmt: skip
        self._bench("baseline", self.targets.server, "this server, speculation off", None)

    def refresh_view(self) -> None:
        """Build the View and hand each widget its part."""
        view = self.live.view(self.wall(), stale_after=3 * max(self.config.interval, 1.0))
        try:
            self.query_one(IdentityBar).view = view.identity
        except NoMatches:  # quitting: a worker's last message came after the widgets went
            return
        self.query_one(DecodePanel).view = view.decode
        self.query_one(SpecPanel).view = view.spec
        self.query_one(BaselinePanel).view = view.baseline
        self.query_one(ServerPanel).view = view.server
        self.query_one(GpuPanel).view = view.gpus
        self.query_one(EventsLog).events = view.events
        self._last_view = view

    # Actions (keys).

    def action_baseline(self) -> None:
        """b: a fresh baseline from the baseline server, or this server when it runs plain."""
        if self.workers_in_group("bench"):
            self.notify("a bench is already running (Esc cancels it)", severity="warning")
            return
        if self.targets.baseline is not None:
            origin = f"baseline server {self.targets.baseline.url}"
            self.live.baseline_progress = (0, self.bench_protocol.runs, None)
            self._bench("baseline", self.targets.baseline, origin, None)
        elif self.live.server.info is not None and self.live.server.info.speculative is None:
            self.live.baseline_progress = (0, self.bench_protocol.runs, None)
            self._bench("baseline", self.targets.server, "this server, speculation off", None)
        else:
            self.push_screen(BaselineChoice(self.config.url), self._on_choice)
        self.refresh_view()

    def _on_choice(self, wait: bool | None) -> None:
        if wait:
            self.live.waiting_for_baseline = True
            self.live.log(self.wall(), "info", "waiting for the server to restart without "
                          "speculation")  # fmt: skip
            self.refresh_view()

    def action_cancel_bench(self) -> None:
        """Esc: cancel a bench in progress (nothing is saved) or stop waiting."""
        if self.live.waiting_for_baseline:
            self.live.waiting_for_baseline = False
            self.live.log(self.wall(), "info", "stopped waiting for a baseline")
        if self._saving:
            self.notify("the snapshot is being saved: too late to cancel", severity="warning")
        for worker in self.workers:
            if worker.group == "bench" and worker.is_running and not self._saving:
                worker.cancel()
        self.refresh_view()

    def action_snapshot(self) -> None:
        """s: snapshot the current configuration as a labelled run."""
        if self.workers_in_group("bench"):
            self.notify("a bench is already running (Esc cancels it)", severity="warning")
            return

        def start(label: str | None) -> None:
            if label is None:
                return
            self.live.baseline_progress = (0, self.bench_protocol.runs, None)
            self._bench("snapshot", self.targets.server, "this server", label or None)
            self.refresh_view()

        self.push_screen(LabelPrompt(), start)

    def action_compare(self) -> None:
        """c: every snapshot of this target, compared with its matched baseline."""
        urls = [self.config.url] + ([self.config.baseline_url] if self.config.baseline_url else [])
        self.push_screen(ComparisonScreen(self.store, urls, self.config.max_age, self.wall))

    def action_toggle_probe(self) -> None:
        """p: pause or resume the probe."""
        self.live.probe_paused = not self.live.probe_paused
        self.live.log(self.wall(), "info", "probe " + ("paused" if self.live.probe_paused else
                                                        "resumed"))  # fmt: skip
        self.refresh_view()

    def action_next_theme(self) -> None:
        """t: the next theme."""
        names = [n for n in self._theme_names if n in self.available_themes]
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"theme: {self.theme}", timeout=2)

    def action_help(self) -> None:
        """?: what every number means."""
        self.push_screen("help")

    def action_diagnostics(self) -> None:
        """i: each source's age and last error, and why each "—" is missing."""
        if self._last_view is not None:
            self.push_screen(DiagnosticsScreen(self._last_view))
