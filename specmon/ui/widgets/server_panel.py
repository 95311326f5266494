"""Server: running/queued requests, KV usage, server-side tok/s, TTFT/ITL from histograms."""

from __future__ import annotations

from textual.reactive import var
from textual.widgets import Static

from specmon.session.view import ServerView
from specmon.ui.format import escape, num, pct
from specmon.ui.widgets import quiet


class ServerPanel(Static):
    """What the server's own /metrics say."""

    view: var[ServerView | None] = var(None)  # the watcher redraws what changed

    def on_mount(self) -> None:
        """Title the panel."""
        self.border_title = "Server (/metrics)"

    def watch_view(self, view: ServerView | None) -> None:
        """Render the server figures, or why they are missing."""
        if view is None:
            return
        if view.metrics_state.startswith("off"):
            quiet.show(self, "[$stale]metrics are off[/]\nstart the server with --enable-metrics")
            return
        quiet.tooltip(self, f"server decode tok/s from {view.decode_source or '—'}")
        lines = [
            f"running {num(view.running, '.0f')} · queued {num(view.queued, '.0f')} · "
            f"KV {pct(view.kv_usage)}",
            f"decode [bold]{num(view.decode_tok_s, '.1f', 'tok/s')}[/] (server)",
            f"TTFT {num(view.ttft_ms, '.0f', 'ms')} · ITL {num(view.itl_ms, '.1f', 'ms')}",
        ]
        if view.metrics_state != "ok":
            lines.append(f"[$stale]metrics {escape(view.metrics_state)}[/]")
        quiet.show(self, "\n".join(lines))
