"""`c`: every snapshot of this target with its matched baseline; `e` exports the table.

The columns follow the width (ui/columns.py): the essential ones always show, cut if need be,
and the highlighted row's verdict and validity are written out in full below the table.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from specmon.analysis.catalogue import figure
from specmon.analysis.validity import LifetimeCheck
from specmon.errors import SpecmonError
from specmon.model import Snapshot
from specmon.probe_prompts import ProbePrompt
from specmon.reports.snapshot_table import (
    ComparisonRow,
    ExportFormat,
    baseline_candidates,
    comparison_rows,
    export,
)
from specmon.storage.private_files import write_private
from specmon.ui.columns import Column, cut, fit
from specmon.ui.format import DASH, escape
from specmon.ui.screens.while_open import after_refresh
from specmon.ui.widgets import quiet
from specmon.wording import interval_text, speedup_text, verdict_text

COLUMNS = (
    Column("id", "#", essential=True),
    Column("when", "when", rank=2),
    Column("label", "label", rank=0),
    Column("config", "config", essential=True, min_width=8, preferred=30),
    Column("decode", "decode", essential=True),
    Column("range", "decode range", rank=3),
    Column("accept", "accept", rank=4),
    Column("cycle", "cycle ms", rank=5),
    Column("baseline", "baseline", rank=6),
    Column("speedup", "speedup", essential=True),
    Column("interval", "95% interval", rank=1),
    Column("verdict", "verdict", essential=True, min_width=7, preferred=12),
    Column("break_even", "break-even", rank=7),
    Column("validity", "validity", essential=True, preferred=30),
)
"""Table order. Essential: which snapshot, its decode tok/s, the speedup and whether it holds."""
LABELLED_FROM = 70
"""Table cells from which the label (what `s` asked for, what tells runs apart) is essential
too, cut to 5 cells at worst: at 80 columns it was left out for the config and validity; below
this the essentials' least widths would not fit beside it."""
WIDE_COLUMNS = tuple(
    replace(c, essential=True, min_width=5, preferred=14) if c.key == "label" else c
    for c in COLUMNS
)
LifetimeReader = Callable[[Sequence[Snapshot]], Awaitable[Mapping[int, LifetimeCheck]]]
"""Reads stored baselines' servers: each one's lifetime check by baseline id."""
SnapshotReader = Callable[[], Sequence[Snapshot]]
"""Reads every stored snapshot (raising `SpecmonError` when the store cannot be read)."""
_INDEX = {column.key: i for i, column in enumerate(COLUMNS)}
DECODE, ACCEPT, CYCLE = figure("decode tok/s"), figure("accept length"), figure("cycle")
BREAK_EVEN = figure("break-even accept length")
"""The catalogue's figures (`analysis.catalogue`), in columns headed by them."""


def _cells(row: ComparisonRow) -> tuple[str, ...]:
    """A row's texts, in COLUMNS order."""
    c = row.comparison
    gain = c.speedup if c else None
    decode = DECODE.value_text
    return (
        str(row.id),
        time.strftime("%m-%d %H:%M", time.localtime(row.created_at)),
        row.label or "",
        row.config,
        DECODE.value_text(row.pooled.decode_tok_s, unit=False),
        f"[{decode(row.decode_tok_s_min, unit=False)}–{decode(row.decode_tok_s_max, unit=False)}]",
        ACCEPT.value_text(row.pooled.accept_length, unit=False),
        CYCLE.value_text(row.pooled.cycle_ms, unit=False),
        f"#{row.baseline_id}" if row.baseline_id else DASH,
        # The catalogue's speedup text in two columns: the value, then its interval, to the
        # same decimals (`wording.speedup_text`).
        speedup_text(gain, interval=False) or DASH,
        interval_text(gain) or DASH,
        verdict_text(c) if c else DASH,
        BREAK_EVEN.value_text(c.break_even if c else None, unit=False),
        row.baseline_note or DASH,
    )


class ComparisonScreen(ModalScreen[None]):
    """The comparison table of this target's snapshots."""

    BINDINGS = [
        Binding("escape,c,q", "dismiss", "Close"),
        Binding("e", "export('md')", "Export .md"),
        Binding("v", "export('csv')", "Export .csv"),
        Binding("j", "export('json')", "Export .json"),
    ]

    def __init__(
        self,
        snapshots: SnapshotReader | None,
        urls: list[str],
        max_age_s: float,
        wall: Callable[[], float],
        lifetimes: Mapping[int, LifetimeCheck],
        *,
        exports: bool = True,
        prompts: Sequence[ProbePrompt] = (),
        check: LifetimeReader | None = None,
        no_store: str = "no snapshot store",
    ) -> None:
        """Args:
        snapshots: Reads every stored snapshot (`ServerSession.stored_snapshots`); None: there
            is no snapshot store.
        urls: Whose snapshots are rows (baselines are matched across every server).
        max_age_s: Older baselines are stale.
        wall: Wall clock.
        lifetimes: The baseline server lifetimes the dashboard knows (by baseline id).
        exports: Whether e, v and j write files (off in a read-only dashboard).
        prompts: The probe's prompts, whose categories the exports name (`--probe-prompts`).
        check: Reads the candidate baselines' servers (`ServerSession.stored_lifetimes`), as
            `snapshots export` does: the rows are judged again once they are read, so that the
            screen and the export say the same of each pair.
        no_store: What to say without a store (`snapshots` None): a replay says why.
        """
        super().__init__()
        self.lifetimes = lifetimes
        self.snapshots = snapshots
        self.urls = urls
        self.max_age_s = max_age_s
        self.wall = wall
        self.exports = exports
        self.prompts = prompts
        self.check = check
        self.no_store = no_store
        self.rows: list[ComparisonRow] = []
        self.cells: list[tuple[str, ...]] = []
        """Each row's full texts, one per column of COLUMNS."""
        self._widths: list[int] = []

    def compose(self) -> ComposeResult:
        """Title, table, status line."""
        with Vertical(id="comparison"):
            yield Static(
                f"Snapshots of {escape(', '.join(self.urls))} (decode in tok/s)",
                id="comparison-title",
            )
            yield DataTable(id="comparison-table", zebra_stripes=True, cursor_type="row")
            yield Static(id="comparison-row")
            keys = (
                "e: export Markdown · v: CSV · j: JSON" if self.exports else "read-only: no exports"
            )
            yield Static(f"{keys} · Esc: close", id="comparison-status")

    def on_mount(self) -> None:
        """Load the snapshots; the table is filled once its width is known."""
        if self.snapshots is None:
            self._nothing(self.no_store)
            return
        try:
            every = self.snapshots()
        except SpecmonError as exc:
            self._nothing(f"store: {exc}")
            return
        snapshots = sorted((s for s in every if s.url in self.urls), key=lambda s: s.created_at)
        self._tabulate(snapshots, every, self.lifetimes)
        if not self.rows:
            how = (
                "b takes a baseline, s a snapshot"
                if self.exports
                else "read-only: b and s are off in this dashboard"
            )
            self._nothing(f"no snapshots of this target yet: {how}")
            return
        candidates = baseline_candidates(snapshots, every)
        if self.check is not None and candidates:
            self.run_worker(
                self._read_lifetimes(snapshots, every, candidates),
                group="comparison-lifetimes",
                exit_on_error=False,
            )

    def _tabulate(
        self,
        snapshots: Sequence[Snapshot],
        every: Sequence[Snapshot],
        lifetimes: Mapping[int, LifetimeCheck],
    ) -> None:
        """The rows by the one baseline rule (`comparison_rows`), with these lifetimes."""
        self.rows = comparison_rows(
            snapshots,
            candidates=every,
            max_age_s=self.max_age_s,
            lifetimes=lifetimes,
            prompts=self.prompts,
        )
        self.cells = [_cells(row) for row in self.rows]

    async def _read_lifetimes(
        self, snapshots: Sequence[Snapshot], every: Sequence[Snapshot], candidates: list[Snapshot]
    ) -> None:
        """Read the candidates' servers, then judge the rows again with what was read."""
        assert self.check is not None
        read = await self.check(candidates)
        self._tabulate(snapshots, every, {**self.lifetimes, **read})
        self._widths = []  # fill again, whatever the width
        self._fill()

    def on_resize(self) -> None:
        """Choose the columns for the new width."""
        after_refresh(self, self._fill)

    def _nothing(self, why: str) -> None:
        """No table to show: `why` in its place, and in the status line."""
        self.query_one(DataTable).display = False
        quiet.show(self.query_one("#comparison-row", Static), escape(why))
        self._status(why)

    def _fill(self) -> None:
        """The essential columns always, the others while they fit; long cells cut."""
        if not self.rows:
            return  # `_nothing` said why
        table = self.query_one(DataTable)
        # The vertical scrollbar takes its cells once the rows overflow.
        available = table.content_size.width - table.styles.scrollbar_size_vertical
        widths = fit(WIDE_COLUMNS if available >= LABELLED_FROM else COLUMNS, self.cells, available)
        if widths == self._widths:
            return
        self._widths = widths
        cursor = table.cursor_row
        table.clear(columns=True)
        shown = [(i, w) for i, w in enumerate(widths) if w]
        for i, width in shown:
            table.add_column(COLUMNS[i].label, width=width, key=COLUMNS[i].key)
        for cells in self.cells:
            table.add_row(*(Text(cut(cells[i], width)) for i, width in shown))
        if self.rows:
            table.move_cursor(row=min(cursor, len(self.rows) - 1))
            self._show_row(table.cursor_row)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Follow the cursor."""
        self._show_row(event.cursor_row)

    def _show_row(self, index: int) -> None:
        """The row's verdict and validity in full: the table may have cut them."""
        if 0 <= index < len(self.cells):
            cells = self.cells[index]
            verdict, validity = cells[_INDEX["verdict"]], cells[_INDEX["validity"]]
            quiet.show(
                self.query_one("#comparison-row", Static),
                escape(f"#{cells[0]} · {verdict} · validity: {validity}"),
            )

    def _status(self, text: str) -> None:
        """`text` where the keys were, and still how to close."""
        self.query_one("#comparison-status", Static).update(escape(f"{text} · Esc: close"))

    def action_export(self, fmt: str) -> None:
        """Write the table to a file in the current directory and show its path."""
        if not self.exports:
            self._status("read-only: exports are off in this dashboard")
            return
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.wall()))
        path = Path.cwd() / f"specmon-comparison-{stamp}.{fmt}"
        try:
            write_private(path, export(self.rows, cast(ExportFormat, fmt)))
        except OSError as exc:
            self._status(f"cannot write {path}: {exc.strerror}")
            return
        self._status(f"exported {len(self.rows)} rows to {path}")
