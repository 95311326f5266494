"""GPUs: one summary line on small terminals; a line per GPU with its utilisation over the last
minute, clocks and power, and the host and server process, on large ones.
"""

from __future__ import annotations

from textual.reactive import var
from textual.widgets import Static

from specmon.session.view import GpuView
from specmon.ui.format import escape
from specmon.ui.widgets import quiet

_TICKS = "▁▂▃▄▅▆▇█"


def util_spark(values: tuple[float, ...], width: int = 20) -> str:
    """The last `width` utilisation values (0–100) as a one-line sparkline."""
    return "".join(_TICKS[min(7, int(v / 100 * 8))] for v in values[-width:]).rjust(width, " ")


class GpuPanel(Static):
    """GPU state: a single line when the screen is small (`-compact`), all GPUs otherwise."""

    view: var[GpuView | None] = var(None)  # the watcher redraws what changed

    def on_mount(self) -> None:
        """Title the panel."""
        self.border_title = "GPUs"

    def watch_view(self, view: GpuView | None) -> None:
        """Render the summary, or every GPU when there is room."""
        if view is None:
            return
        quiet.subtitle(self, escape(view.source or ""))
        # A tiny screen (specmon.tcss) gives the row of "no NVML here" to the panels.
        self.set_class(view.unavailable is not None, "-unavailable")
        if view.unavailable is not None:
            quiet.show(self, f"[$stale]GPUs:[/] [dim]{escape(view.unavailable)}[/]")
            return
        style = "$stale" if view.warn else "$good"
        summary = f"[{style}]GPUs:[/] {escape(view.summary or '')}"
        if self.screen.has_class("-compact") or not view.lines:
            quiet.show(self, summary)
            return
        lines = [summary]
        for line, history in zip(view.lines, view.util_history, strict=False):
            lines.append(f"[$primary]{util_spark(history)}[/] {escape(line)}")
        if view.host:
            lines.append(f"[dim]{escape(view.host)}[/]")
        quiet.show(self, "\n".join(lines))
