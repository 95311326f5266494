"""Server: running/queued requests, KV usage, the server's throughput, TTFT/ITL from histograms.

These are the server's own figures over all its requests; the probe's decode speed is in the
Decode panel. Each figure says the span it is read over.
"""

from __future__ import annotations

from textual.reactive import var
from textual.widgets import Static

from specmon.analysis.catalogue import figure, server_figure
from specmon.session.view import ServerView
from specmon.ui.format import escape, num, pct
from specmon.ui.widgets import quiet
from specmon.wording import DASH, duration

# The server's decode tok/s and mean TTFT over all its requests, to the probe's figures' digits;
# its ITL.
DECODE, TTFT, ITL = figure("decode tok/s"), figure("TTFT"), server_figure("ITL")


class ServerPanel(Static):
    """What the server's own /metrics say: a line per figure on tall terminals."""

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
        quiet.tooltip(self, f"server throughput from {view.decode_source or DASH}")
        # A line per figure only where the bottom row grows to fit it (specmon.tcss `-tall`).
        lines = _lines(view) if self.screen.has_class("-tall") else _compact(view)
        if view.metrics_state != "ok":
            lines.append(f"[$stale]metrics {escape(view.metrics_state)}[/]")
        quiet.show(self, "\n".join(lines))


def _running(view: ServerView) -> str:
    """The running gauge, or 0 when no token moved: SGLang keeps the last batch's count."""
    if view.running_stale:
        return f"running 0 [dim](idle; gauge still says {num(view.running, '.0f')})[/]"
    return f"running {num(view.running, '.0f')}"


def _throughput(view: ServerView) -> str:
    if view.idle:
        return "[dim]idle[/]"
    return f"[bold]{DECODE.value_text(view.decode_tok_s)}[/]"


def _compact(view: ServerView) -> list[str]:
    return [
        f"{_running(view)} · queued {num(view.queued, '.0f')} · KV {pct(view.kv_usage)}",
        f"server {_throughput(view)} [dim](all reqs, {duration(view.rate_span_s)})[/]",
        f"TTFT {TTFT.value_text(view.ttft_ms)} · {_itl(view)} {ITL.value_text(view.itl_ms)}",
    ]


def _lines(view: ServerView) -> list[str]:
    latency = f"[dim](mean, last {duration(view.latency_span_s)})[/]"
    return [
        _running(view),
        f"queued {num(view.queued, '.0f')}",
        f"KV cache {pct(view.kv_usage)}",
        f"throughput {_throughput(view)} "
        f"[dim](server, all requests, last {duration(view.rate_span_s)})[/]",
        f"TTFT {TTFT.value_text(view.ttft_ms)} {latency}",
        f"{_itl(view)} {ITL.value_text(view.itl_ms)} {latency}",
    ]


def _itl(view: ServerView) -> str:
    """vLLM's ITL is per engine step (a draft+verify cycle), not per token: beside Decode's
    ms/token, a speculative server's ITL reads twice as slow (docs/metrics.md, latency
    histograms); SGLang's is per token."""
    return "ITL/step" if view.itl_per_step else "ITL"
