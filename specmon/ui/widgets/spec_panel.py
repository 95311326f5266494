"""Speculation: accept length (probe and server; the gap named when the probe is not
representative of the traffic), cycle time, break-even and margin (first: a short panel keeps
them), the server's accept-rate gauge, a histogram of tokens per verify step, acceptance by draft
position, and accept length and decode tok/s per probe category when the probe rotates several.
"""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import var
from textual.widgets import Static

from specmon.analysis.catalogue import figure
from specmon.analysis.comparison import Verdict
from specmon.session.view import CategoryView, DraftingView, SpecView
from specmon.ui.format import DASH, cut, num, pct
from specmon.ui.widgets import quiet
from specmon.ui.widgets.history_spark import HistorySpark
from specmon.wording import position_bars

ACCEPT, CYCLE = figure("accept length"), figure("cycle")
BREAK_EVEN, MARGIN = figure("break-even accept length"), figure("margin")
"""The catalogue's figures (`analysis.catalogue`): the panel writes them to its digits."""
_BARS = " ▁▂▃▄▅▆▇█"
_DRAFT_POINTS = 12
"""History points beside the drafting figures (a minute at one point per 5 s)."""


def histogram_line(counts: tuple[int, ...]) -> str:
    """`1▂ 2▅ 3█`: verify steps by the tokens they produced, scaled to the largest."""
    top = max(counts, default=0)
    if not top:
        return DASH
    return " ".join(f"{i}{_BARS[round(8 * c / top)]}" for i, c in enumerate(counts, 1))


def drafting_line(drafting: DraftingView) -> str:
    """`drafting k 3.0 of 3 · 100% of steps ▇▇▁`: what an adaptive server drafts now, beside its
    launch flags' k, and its history (draft tokens per decode step, last points)."""
    top = max((*drafting.history, float(drafting.configured or 0)), default=0.0)
    recent = drafting.history[-_DRAFT_POINTS:]
    spark = "".join(_BARS[round(8 * v / top)] if top else _BARS[0] for v in recent)
    duty = f" · {pct(drafting.duty_cycle)} of steps" if drafting.duty_cycle is not None else ""
    if drafting.off:
        now = f"[bold $stale]OFF[/] at this load{duty}"
    else:
        of = f" of {drafting.configured}" if drafting.configured is not None else ""
        now = f"k [bold]{num(drafting.draft_length, '.1f')}[/]{of}{duty}"
    return f"drafting {now} {spark}".rstrip()


CATEGORY_COLUMN = 6
"""Characters per category column: a name cut to 5 (with "…") and a space (the full names in the
tooltip)."""


def category_lines(categories: tuple[CategoryView, ...]) -> list[str]:
    """Four lines, a column per category: its name, accept length, decode tok/s and speedup
    against its own baseline ("—" where none applies: `i` says why)."""
    if not categories:
        return []
    width = CATEGORY_COLUMN

    def row(label: str, cells: list[str]) -> str:
        return f"{label:<7}" + "".join(cell.rjust(width) for cell in cells)

    names = [escape(cut(c.category, width - 1)) for c in categories]
    return [
        "[dim]" + row("by cat.", names) + "[/]",
        row("accept", [ACCEPT.value_text(c.accept_length, unit=False) for c in categories]),
        # Whole tok/s, not the catalogue's decimal: "1234.5" would fill a column of 6.
        row("tok/s", [num(c.decode_tok_s, ".0f") for c in categories]),
        row("speedup", [_speedup_cell(c) for c in categories]),
    ]


def _speedup_cell(category: CategoryView) -> str:
    """ "+21%": whole percents, so that a column of 6 keeps a space between cells (the
    catalogue's speedup, with its interval, is on the `i` screen)."""
    comparison = category.comparison
    return DASH if comparison is None else pct(comparison.speedup.value, signed=True, places=0)


def margin_text(margin: float, verdict: Verdict | None) -> str:
    """ "+0.38 above" (break-even, beside it): the margin in its own words (the verdict is the
    speedup's, from its interval); coloured only where that verdict agrees with its sign."""
    where = "above" if margin > 0 else "below" if margin < 0 else "at"
    agrees = (verdict == Verdict.WINNING and margin > 0) or (
        verdict == Verdict.LOSING and margin < 0
    )
    style = ("$good" if margin > 0 else "$bad") if agrees else ""
    return f"[bold {style}]{MARGIN.format(margin)} {where}[/]"


class SpecPanel(Vertical):
    """Acceptance and its pay-off, and the accept length of each probe of the last 5 minutes."""

    view: var[SpecView | None] = var(None)  # the watcher redraws what changed

    def compose(self) -> ComposeResult:
        """Figures, then the accept-length sparkline (it takes what room is left)."""
        yield Static(id="spec-body")
        yield HistorySpark(id="spec-spark")

    def on_mount(self) -> None:
        """Title the panel."""
        self.border_title = "Speculation"

    def watch_view(self, view: SpecView | None) -> None:
        """Render the figures; margin coloured by sign."""
        if view is None:
            return
        body = self.query_one("#spec-body", Static)
        what = f"accept length of each probe, last {view.accept_history_span}"
        self.query_one(HistorySpark).plot(view.accept_history, view.accept_history_points, what, 2)
        if view.enabled is False:
            quiet.show(
                body,
                "speculation is off on this server\n[dim]accept length and cycle "
                "time need a speculative server[/]",
            )
            return
        # The server's accept length beside the probe's: the same figure, the same digits.
        server = ACCEPT.value_text(view.server_accept_length, unit=False)
        quiet.tooltip(self, f"server accept length from {view.server_accept_source or '—'}")
        margin = DASH if view.margin is None else margin_text(view.margin, view.verdict)
        # The cycle's percentiles, in its unit: to its digits.
        p50, p95 = (
            CYCLE.value_text(ms, unit=False) for ms in (view.cycle_ms_p50, view.cycle_ms_p95)
        )
        gap = view.traffic_gap
        lines = [
            f"accept [bold]{ACCEPT.value_text(view.accept_length, unit=False)}[/] probe · "
            f"{server} server",
            *(
                [f"[bold $warning]probe ≠ traffic[/] {gap.share:+.0%}: not representative"]
                if gap is not None and gap.named
                else []
            ),
            f"cycle [bold]{CYCLE.value_text(view.cycle_ms)}[/] · p50/p95 {p50}/{p95}",
            f"break-even {BREAK_EVEN.value_text(view.break_even, unit=False)} · {margin}",
            # Only where the server drafts otherwise than its flags (now or earlier).
            *([drafting_line(view.drafting)] if view.drafting and view.drafting.adaptive else []),
            # SGLang's gauge over its last log interval: it jumps while accept length holds.
            f"server accept-rate gauge {pct(view.accept_rate)} [dim](last 40 steps)[/]",
            f"tokens/step {histogram_line(view.tokens_per_cycle)}",
            "by position "
            + (position_bars(view.positions, percent=False) if view.positions else DASH)
            + " [dim]· w what-if[/]",
            *category_lines(view.categories),
        ]
        names = ", ".join(c.category for c in view.categories)
        notes = [
            view.cycle_note,
            gap.sentence if gap is not None and gap.named else None,
            f"probe categories: {names}" if names else None,
        ]
        if any(notes):
            quiet.tooltip(body, "\n".join(note for note in notes if note))
        quiet.show(body, "\n".join(lines))
