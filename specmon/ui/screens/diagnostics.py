"""`i`: each source's age and last error, why each "—" on the dashboard is missing, where the
last probe's acceptance figures came from (per-request details or the counters), and every
figure of the catalogue now (`analysis.catalogue`: the recent probes and their comparison)."""

from __future__ import annotations

from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from specmon.session.view import View
from specmon.ui.format import age

CLOSE = "Esc: close"
MORE = "↑↓ PgDn: more · "


class DiagnosticsScreen(ModalScreen[None]):
    """Sources and missing values, explained."""

    BINDINGS = [Binding("escape,i,q", "dismiss", "Close")]

    def __init__(self, view: View) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        """Two short sections, each a table of names beside what is said of them: a long reason
        wraps in its own column. One widget (a grid of Statics took twice as long to open)."""
        variables = self.app.theme_variables
        bad, stale = (
            Style(color=Color.parse(variables[name]).rich_color) for name in ("bad", "stale")
        )
        sources = []
        for source in self.view.sources:
            if source.error:
                state = Text(source.error, style=bad)
            elif source.unavailable:  # it answered, but with nothing to show: not "ok"
                state = Text(f"unavailable: {source.unavailable}", style=stale)
            else:
                state = Text("ok")
            sources.append((f"{source.name:<8} {age(source.age_s):>5} ·", state))
        missing = [(f"{what}:", Text(why)) for what, why in self.view.missing]
        with VerticalScroll(id="dialog") as dialog:
            dialog.border_subtitle = CLOSE  # on the border: in view at any height
            yield Static(
                Group(
                    Text.assemble(
                        ("Sources", "bold"), " (age of the last good reading · last error)"
                    ),
                    _pairs(sources),
                    Text(),
                    Text("Why values show —", style="bold"),
                    _pairs(missing) if missing else Text("  nothing is missing"),
                    *_origins(self.view.figure_sources),
                    *_chosen(self.view),
                    Text(),
                    Text.assemble(
                        ("Every figure now", "bold"),
                        " (the recent probes pooled; against a baseline that applies)",
                    ),
                    _pairs([(f"{f.key}:", Text(f.text)) for f in self.view.figures]),
                )
            )

    def on_mount(self) -> None:
        """Whether the dialog runs past its last line is known once it is laid out, and again
        at each size."""
        dialog = self.query_one("#dialog", VerticalScroll)
        self.watch(dialog, "show_vertical_scrollbar", self._keys)

    def _keys(self, scrolls: bool) -> None:
        """The scroll keys on the border while there is more than the dialog shows."""
        self.query_one("#dialog", VerticalScroll).border_subtitle = (
            MORE if scrolls else ""
        ) + CLOSE


def _origins(sources: tuple[tuple[str, str], ...]) -> tuple[Text | Table, ...]:
    """The section on where the last probe's acceptance came from; nothing before one."""
    if not sources:
        return ()
    rows = [(f"{what}:", Text(where)) for what, where in sources]
    return Text(), Text("Where the last probe's acceptance came from", style="bold"), _pairs(rows)


def _chosen(view: View) -> tuple[Text | Table, ...]:
    """The section on how the baseline was chosen: by which rule, and what else was considered
    (`analysis.baseline_rule`); nothing without a baseline."""
    base = view.baseline
    if not base.present or base.chosen_by is None:
        return ()
    rows = [(f"#{base.snapshot_id}:", Text(base.chosen_by))]
    return Text(), Text("How the baseline was chosen", style="bold"), _pairs(rows)


def _pairs(rows: list[tuple[str, Text]]) -> Table:
    table = Table.grid(padding=(0, 1), pad_edge=False)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for name, said in rows:
        table.add_row(Text("  " + name), said)
    return table
