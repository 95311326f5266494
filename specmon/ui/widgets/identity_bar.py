"""The top line: server, backend and version, model, tp, speculation, uptime, live state."""

from __future__ import annotations

import textwrap

from textual.reactive import var
from textual.widgets import Static

from specmon.session.view import IdentityView
from specmon.ui.fitting import left_out
from specmon.ui.format import age, escape
from specmon.ui.widgets import quiet

_STATE_STYLE = {"live": "$good", "stale": "$stale", "down": "$bad", "connecting": "$stale"}
LINES = 2  # the identity's most (#identity's max-height)
# What goes first when the line would take more than LINES (60 columns): the backend's version,
# then the uptime, tp, the model (the events log's "server:" line names them), and last the
# address (a down server's reason names it); the state and the speculation stay.
DROPPED_FIRST = ("title", "up", "tp", "model", "host")


class IdentityBar(Static):
    """One line saying what is being watched and whether it is live."""

    view: var[IdentityView | None] = var(None)  # the watcher redraws what changed

    def watch_view(self, view: IdentityView | None) -> None:
        """Render the identity line, fitted to LINES lines of the width."""
        if view is None:
            quiet.show(self, "connecting…")
            return
        parts = fitted(identity_parts(view), self.content_size.width)
        quiet.show(self, " · ".join(markup for _, _, markup in parts))
        quiet.tooltip(self, escape(f"{view.url} · {view.model or ''}"))  # markup: shown as it is

    def on_resize(self) -> None:
        """What fits depends on the width."""
        self.watch_view(self.view)


Part = tuple[str, str, str]
"""(what it is, its plain text, its markup)."""


def identity_parts(view: IdentityView) -> list[Part]:
    """Every part of the line, in its order."""
    style = _STATE_STYLE[view.state]
    # A replay's state is the recording's: "● live (replay)", never a bare "● live".
    notes = ", ".join(n for n in ("replay" if view.replay else "", view.state_detail) if n)
    detail = f" ({notes})" if notes else ""
    host = view.url.split("://", 1)[-1]
    state = f"● {view.state}"
    parts = [
        ("state", state + detail, f"[bold {style}]{state}[/]{escape(detail)}"),
        ("host", host, f"[bold]{escape(host)}[/]"),
    ]
    if view.title:
        parts.append(("title", view.title, escape(view.title)))
    if view.model:
        model = view.model.rstrip("/").rsplit("/", 1)[-1]
        parts.append(("model", model, escape(model)))
    if view.tp_size is not None:
        parts.append(("tp", f"tp{view.tp_size}", f"tp{view.tp_size}"))
    parts.append(("speculation", view.speculation, f"[$primary]{escape(view.speculation)}[/]"))
    if view.up_for_s is not None:  # in minutes: a line that changes each second costs a redraw
        up = "<1m" if view.up_for_s < 60 else age(view.up_for_s)
        # Without the process's start time, only how long specmon has seen this lifetime.
        text = f"up {up}" if view.uptime_known else f"seen {up}"
        parts.append(("up", text, text))
    return parts


def fitted(parts: list[Part], width: int) -> list[Part]:
    """`parts` less those DROPPED_FIRST needs to leave out to wrap into LINES lines of `width`
    (all of them while the width is unknown)."""

    def fits(out: frozenset[str]) -> bool:
        text = " · ".join(plain for name, plain, _ in parts if name not in out)
        # Textual breaks at spaces, not at a model name's hyphens.
        return not width or len(textwrap.wrap(text, width, break_on_hyphens=False)) <= LINES

    out = left_out(DROPPED_FIRST, fits)
    return [part for part in parts if part[0] not in out]
