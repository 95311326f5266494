"""The top line: server, backend and version, model, tp, speculation, uptime, live state."""

from __future__ import annotations

from textual.reactive import var
from textual.widgets import Static

from specmon.session.view import IdentityView
from specmon.ui.format import age, escape
from specmon.ui.widgets import quiet

_STATE_STYLE = {"live": "$good", "stale": "$stale", "down": "$bad", "connecting": "$stale"}


class IdentityBar(Static):
    """One line saying what is being watched and whether it is live."""

    view: var[IdentityView | None] = var(None)  # the watcher redraws what changed

    def watch_view(self, view: IdentityView | None) -> None:
        """Render the identity line."""
        if view is None:
            quiet.show(self, "connecting…")
            return
        style = _STATE_STYLE[view.state]
        detail = f" ({escape(view.state_detail)})" if view.state_detail else ""
        host = view.url.split("://", 1)[-1]
        parts = [f"[bold {style}]● {view.state}[/]{detail}", f"[bold]{escape(host)}[/]"]
        if view.title:
            parts.append(escape(view.title))
        if view.model:
            parts.append(escape(view.model.rstrip("/").rsplit("/", 1)[-1]))
        if view.tp_size is not None:
            parts.append(f"tp{view.tp_size}")
        parts.append(f"[$primary]{escape(view.speculation)}[/]")
        if view.up_for_s is not None:  # in minutes: a line that changes each second costs a redraw
            up = "<1m" if view.up_for_s < 60 else age(view.up_for_s)
            # Without the process's start time, only how long specmon has seen this lifetime.
            parts.append(f"up {up}" if view.uptime_known else f"seen {up}")
        quiet.show(self, " · ".join(parts))
        quiet.tooltip(self, f"{view.url} · {view.model or ''}")
