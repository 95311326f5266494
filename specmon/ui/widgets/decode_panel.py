"""Decode: the probe's decode tok/s (big), ms/token, TTFT and a 5-minute sparkline."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import var
from textual.widgets import Digits, Static

from specmon.analysis.catalogue import figure
from specmon.session.view import BenchView, DecodeView
from specmon.ui.format import DASH, age, escape
from specmon.ui.widgets import quiet
from specmon.ui.widgets.history_spark import HistorySpark

# The latest probe's decode tok/s, ms per token and TTFT: one run's, to the catalogue's digits.
DECODE, MS_PER_TOKEN, TTFT = figure("decode tok/s"), figure("ms per token"), figure("TTFT")


class DecodePanel(Vertical):
    """The headline figure."""

    view: var[DecodeView | None] = var(None)  # the watcher redraws what changed
    bench: var[BenchView | None] = var(None)
    """A labelled snapshot (`s`) in progress: it times this server, so its progress shows here
    (the Baseline panel's border is for a baseline being taken)."""

    def compose(self) -> ComposeResult:
        """Big digits, detail line, sparkline, probe status."""
        yield Digits(DASH, id="decode-digits")
        yield Static(id="decode-detail")
        yield HistorySpark(id="decode-spark")
        yield Static(id="decode-status", classes="dim")

    def on_mount(self) -> None:
        """Title the panel."""
        self.border_title = "Decode (probe)"

    def watch_view(self, view: DecodeView | None) -> None:
        """Show the latest probe and the server's history."""
        if view is None:
            return
        digits = self.query_one("#decode-digits", Digits)
        decode = DECODE.value_text(view.decode_tok_s, unit=False)
        if digits.value != decode:
            digits.update(decode)
        # The title carries the figure too: small terminals hide the big digits. The server
        # down (`-down`, set by the app), it is the last seen, dimmed (specmon.tcss).
        when = "(last seen)" if self.has_class("-down") else "(probe)"  # its age: the status
        quiet.title(self, f"Decode [bold]{decode}[/] {DECODE.unit} {when}")
        quiet.show(
            self.query_one("#decode-detail", Static),
            f"{MS_PER_TOKEN.value_text(view.ms_per_token)} · TTFT {TTFT.value_text(view.ttft_ms)}",
        )
        # Not the probe's rate above it: the server's output over all its requests, idle time
        # included, so an idle server's sparkline sits below one stream's decode speed.
        what = f"server tok/s, all requests, {view.history_span}"
        source = view.history_source or DASH
        self.query_one(HistorySpark).plot(
            view.history, view.history_points, what, source=source, marks=view.history_marks
        )
        status = f"probe {escape(view.probe_state)}"
        if view.probe_age_s is not None:
            status += f" · last {age(view.probe_age_s)} ago"
        quiet.show(self.query_one("#decode-status", Static), status)

    def watch_bench(self, bench: BenchView | None) -> None:
        """Say which run of a snapshot is going, and how to stop it."""
        if bench is None or bench.kind != "snapshot":
            quiet.subtitle(self, "")
            return
        eta = f" · ETA {age(bench.eta_s)}" if bench.eta_s else ""
        quiet.subtitle(self, f"snapshot run {bench.done}/{bench.total}{eta} · Esc cancels")
