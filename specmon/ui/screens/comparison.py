"""`c`: every snapshot of this target with its matched baseline; `e` exports the table."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from specmon.analysis.validity import LifetimeCheck
from specmon.errors import SpecmonError
from specmon.exports import ComparisonRow, ExportFormat, comparison_rows, export
from specmon.store import Store
from specmon.ui.format import DASH, escape, num
from specmon.wording import speedup_text, validity_mark, verdict_text


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
        store: Store | None,
        urls: list[str],
        max_age_s: float,
        wall: Callable[[], float],
        lifetimes: Mapping[int, LifetimeCheck],
    ) -> None:
        """Args:
        store: Where the snapshots are.
        urls: Whose snapshots are rows (baselines are matched across every server).
        max_age_s: Older baselines are stale.
        wall: Wall clock.
        lifetimes: The baseline server lifetimes the dashboard knows (by baseline id).
        """
        super().__init__()
        self.lifetimes = lifetimes
        self.store = store
        self.urls = urls
        self.max_age_s = max_age_s
        self.wall = wall
        self.rows: list[ComparisonRow] = []

    def compose(self) -> ComposeResult:
        """Title, table, status line."""
        with Vertical(id="comparison"):
            yield Static(f"Snapshots of {escape(', '.join(self.urls))}", id="comparison-title")
            yield DataTable(id="comparison-table", zebra_stripes=True)
            yield Static(
                "e: export Markdown · v: CSV · j: JSON · Esc: close", id="comparison-status"
            )

    def on_mount(self) -> None:
        """Load the snapshots and fill the table."""
        table = self.query_one(DataTable)
        table.add_columns("#", "when", "label", "config", "decode tok/s", "accept", "cycle ms",
                          "baseline", "speedup (95%)", "verdict", "break-even",
                          "validity")  # fmt: skip
        if self.store is None:
            self._status("no snapshot store")
            return
        try:
            every = self.store.list()
        except SpecmonError as exc:
            self._status(f"store: {exc}")
            return
        snapshots = sorted((s for s in every if s.url in self.urls), key=lambda s: s.created_at)
        self.rows = comparison_rows(snapshots, candidates=every, now=self.wall(),
                                    max_age_s=self.max_age_s, lifetimes=self.lifetimes)  # fmt: skip
        for row in self.rows:
            c = row.comparison
            table.add_row(
                str(row.id),
                time.strftime("%m-%d %H:%M", time.localtime(row.created_at)),
                row.label or "",
                row.config,
                f"{num(row.pooled.decode_tok_s)} "
                f"[{num(row.decode_tok_s_min)}–{num(row.decode_tok_s_max)}]",
                num(row.pooled.accept_length, ".2f"),
                num(row.pooled.cycle_ms, ".1f"),
                f"#{row.baseline_id}" if row.baseline_id else DASH,
                (speedup_text(c.speedup) or DASH) if c else DASH,
                verdict_text(c) if c else DASH,
                num(c.break_even if c else None, ".2f"),
                validity_mark(row.validity) or DASH,
            )
        if not self.rows:
            self._status("no snapshots of this target yet: b takes a baseline, s a snapshot")

    def _status(self, text: str) -> None:
        self.query_one("#comparison-status", Static).update(escape(text))

    def action_export(self, fmt: str) -> None:
        """Write the table to a file in the current directory and show its path."""
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.wall()))
        path = Path.cwd() / f"specmon-comparison-{stamp}.{fmt}"
        try:
            path.write_text(export(self.rows, cast(ExportFormat, fmt)), encoding="utf-8")
        except OSError as exc:
            self._status(f"cannot write {path}: {exc.strerror}")
            return
        self._status(f"exported {len(self.rows)} rows to {path}")
