"""Decode: the probe's decode tok/s (big), ms/token, TTFT and a 5-minute sparkline."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Digits, Sparkline, Static

from specmon.analysis.view import DecodeView
from specmon.ui.format import DASH, age, escape, num


class DecodePanel(Vertical):
    """The headline figure."""

    view: reactive[DecodeView | None] = reactive(None)

    def compose(self) -> ComposeResult:
        """Big digits, detail line, sparkline, probe status."""
        yield Digits(DASH, id="decode-digits")
        yield Static(id="decode-detail")
        yield Sparkline([], id="decode-spark")
        yield Static(id="decode-status", classes="dim")

    def on_mount(self) -> None:
        """Title the panel."""
        self.border_title = "Decode (probe)"

    def watch_view(self, view: DecodeView | None) -> None:
        """Show the latest probe and the server's history."""
        if view is None:
            return
        self.query_one("#decode-digits", Digits).update(num(view.decode_tok_s))
        # The title carries the figure too: small terminals hide the big digits.
        self.border_title = f"Decode [bold]{num(view.decode_tok_s)}[/] tok/s (probe)"
        self.query_one("#decode-detail", Static).update(
            f"{num(view.ms_per_token, '.1f', 'ms/token')} · TTFT {num(view.ttft_ms, '.0f', 'ms')}"
        )
        spark = self.query_one("#decode-spark", Sparkline)
        spark.data = list(view.history)
        spark.tooltip = f"server decode tok/s, 5 min ({view.history_source or DASH})"
        status = f"probe {escape(view.probe_state)}"
        if view.probe_age_s is not None:
            status += f" · last {age(view.probe_age_s)} ago"
        self.query_one("#decode-status", Static).update(status)
