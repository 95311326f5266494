"""The dashboard writes each catalogued figure as the catalogue does (issue 26): random histories
of a speculative server and its baseline (tests/test_surfaces.py) go through the session, their
View is shown, and each figure is read back from the Decode, Server, Speculation and Baseline
panels, the fleet table's cells and the comparison table's (`c`), against the catalogue's
`format` (or `written`) of the same values; the server's own figures (its TTFT, to TTFT's
digits; its ITL, a `ServerFigure`) from the Server panel.

Where a surface writes fewer digits for room (docs/metrics.md, "The catalogue"), the test says
what it writes instead: the category columns, the fleet's speedup without its interval, the
short Baseline panel's speedup without its interval.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from test_dashboard import healthy
from test_surfaces import (
    HERE,
    MAX_AGE_S,
    NOW,
    PROTOCOL,
    SPEEDUP_TEXT,
    History,
    check_lifetime,
    history,
    live_session,
)
from textual.widgets import Digits, Static

from specmon.analysis.catalogue import (
    CATALOGUE,
    SERVER_FIGURES,
    Figure,
    Measured,
    ServerFigure,
    figure,
    server_figure,
)
from specmon.analysis.comparison import Comparison, Speedup, verdict
from specmon.analysis.pooled import Pooled
from specmon.model import Snapshot
from specmon.reports.snapshot_table import ComparisonRow, comparison_rows
from specmon.session.fleet_row import fleet_row
from specmon.session.view import View
from specmon.storage.store import Store
from specmon.ui.app import SpecmonApp
from specmon.ui.screens import comparison as comparison_screen
from specmon.ui.screens import fleet as fleet_screen
from specmon.ui.widgets.baseline_panel import BaselinePanel
from specmon.ui.widgets.decode_panel import DecodePanel
from specmon.ui.widgets.server_panel import ServerPanel
from specmon.ui.widgets.spec_panel import SpecPanel
from specmon.wording import DASH, speedup_text

DECODE, MS_PER_TOKEN = figure("decode tok/s"), figure("ms per token")
ACCEPT, CYCLE, SPEEDUP = figure("accept length"), figure("cycle"), figure("speedup")
BREAK_EVEN, MARGIN = figure("break-even accept length"), figure("margin")
TTFT, ITL = figure("TTFT"), server_figure("ITL")
FIG = r"([+-]?\d+\.\d+|—)"
"""A figure as a panel writes one, or "—" where it is missing."""
WHOLE = r"([+-]?\d+(?:\.\d+)?|—)"
"""A figure to any digits, whole ones too (TTFT's): what it was written to is then compared."""
SEEDS = range(0, 60, 4)
SURFACES = {
    "Decode title", "Decode digits", "Decode detail", "Decode detail (TTFT)", "Server (TTFT)",
    "Server (ITL)", "Server (throughput)", "Speculation (probe)",
    "Speculation (server)", "Speculation (cycle)", "Speculation (p50)", "Speculation (p95)",
    "Speculation (break-even)", "Speculation (margin)", "Baseline", "Baseline (lowest)",
    "Baseline (highest)", "Baseline (base bar)", "Baseline (now bar)", "Baseline (speedup)",
    "fleet", "comparison", "comparison (range)",
}  # fmt: skip
"""Where the test reads figures (`panel_figures`, `table_figures`)."""


@dataclass(frozen=True, slots=True)
class Read:
    """A figure read back from a surface, beside the catalogue's text of its value."""

    surface: str
    figure: Figure | ServerFigure
    said: str
    expected: str


def _groups(pattern: str, text: str, surface: str) -> tuple[str, ...]:
    found = re.search(pattern, text, re.MULTILINE)
    assert found is not None, (surface, pattern, text)
    return found.groups()


def _format(f: Figure | ServerFigure, value: float | None) -> str:
    """The catalogue's digits of a value, "—" where there is none (as every panel says it)."""
    return f.format(value) or DASH


def _body(app: SpecmonApp, panel: type[SpecPanel | BaselinePanel], body: str) -> str:
    return str(app.query_one(panel).query_one(body, Static).render())


def panel_figures(app: SpecmonApp, view: View) -> Iterator[Read]:
    """Every catalogued figure the three panels write, read from what they show."""
    decode, spec, base = view.decode, view.spec, view.baseline
    panel = app.query_one(DecodePanel)
    title = str(panel.border_title)
    # "(last seen)" while the server is down: the last figure, dimmed.
    pattern = rf"^Decode \[bold\]{FIG}\[/\w*\] tok/s \((?:probe|last seen)\)$"
    (said,) = _groups(pattern, title, "Decode title")
    yield Read("Decode title", DECODE, said, _format(DECODE, decode.decode_tok_s))
    digits = panel.query_one("#decode-digits", Digits).value
    yield Read("Decode digits", DECODE, digits, _format(DECODE, decode.decode_tok_s))
    detail = str(panel.query_one("#decode-detail", Static).render())
    said, ttft = _groups(rf"^{FIG}(?: ms/token)? · TTFT {WHOLE}(?: ms)?$", detail, "Decode detail")
    yield Read("Decode detail", MS_PER_TOKEN, said, _format(MS_PER_TOKEN, decode.ms_per_token))
    yield Read("Decode detail (TTFT)", TTFT, ttft, _format(TTFT, decode.ttft_ms))

    # The server's own TTFT (its mean over all its requests) to TTFT's digits, its ITL, and its
    # decode tok/s to decode tok/s's.
    server = view.server
    if not server.metrics_state.startswith("off"):
        text = str(app.query_one(ServerPanel).render())
        (ttft,) = _groups(rf"^TTFT {WHOLE}(?: ms)?(?: |$)", text, "Server (TTFT)")
        yield Read("Server (TTFT)", TTFT, ttft, _format(TTFT, server.ttft_ms))
        (itl,) = _groups(rf"ITL(?:/step)? {WHOLE}(?: ms)?(?: |$)", text, "Server (ITL)")
        yield Read("Server (ITL)", ITL, itl, _format(ITL, server.itl_ms))
        if not server.idle:  # its decode tok/s over all requests, to decode tok/s's digits
            pattern = rf"^(?:server|throughput) {FIG}(?: tok/s)?(?: |$)"
            (tok_s,) = _groups(pattern, text, "Server (throughput)")
            yield Read("Server (throughput)", DECODE, tok_s, _format(DECODE, server.decode_tok_s))

    text = _body(app, SpecPanel, "#spec-body")
    probe, server = _groups(rf"^accept {FIG} probe · {FIG} server$", text, "Speculation")
    yield Read("Speculation (probe)", ACCEPT, probe, _format(ACCEPT, spec.accept_length))
    yield Read("Speculation (server)", ACCEPT, server, _format(ACCEPT, spec.server_accept_length))
    cycle, p50, p95 = _groups(rf"^cycle {FIG}(?: ms)? · p50/p95 {FIG}/{FIG}$", text, "cycle")
    yield Read("Speculation (cycle)", CYCLE, cycle, _format(CYCLE, spec.cycle_ms))
    yield Read("Speculation (p50)", CYCLE, p50, _format(CYCLE, spec.cycle_ms_p50))
    yield Read("Speculation (p95)", CYCLE, p95, _format(CYCLE, spec.cycle_ms_p95))
    be, margin = _groups(rf"^break-even {FIG} · (?:([+-]\d+\.\d+) \S|—)", text, "break-even")
    yield Read("Speculation (break-even)", BREAK_EVEN, be, _format(BREAK_EVEN, spec.break_even))
    if spec.verdict is not None:  # the margin beside its verdict
        yield Read("Speculation (margin)", MARGIN, margin, _format(MARGIN, spec.margin))
    else:
        assert margin is None

    if not base.present:
        return
    text = _body(app, BaselinePanel, "#baseline-body")
    tok_s, low, high = _groups(rf"^#\d+ {FIG}(?: tok/s)? \[{FIG}–{FIG}\]$", text, "Baseline")
    yield Read("Baseline", DECODE, tok_s, _format(DECODE, base.tok_s))
    yield Read("Baseline (lowest)", DECODE, low, _format(DECODE, base.tok_s_min))
    yield Read("Baseline (highest)", DECODE, high, _format(DECODE, base.tok_s_max))
    if base.tok_s is not None and base.current_tok_s is not None:  # the bars
        (said,) = _groups(rf"^base .* {FIG}$", text, "Baseline (base bar)")
        yield Read("Baseline (base bar)", DECODE, said, _format(DECODE, base.tok_s))
        (said,) = _groups(rf"^now .* {FIG} \d+ probes?$", text, "Baseline (now bar)")
        yield Read("Baseline (now bar)", DECODE, said, _format(DECODE, base.current_tok_s))
    if base.comparison is not None:  # struck through against a stale baseline, but written
        (said,) = _groups(rf"^speedup {SPEEDUP_TEXT}", text, "Baseline (speedup)")
        written = SPEEDUP.written(Measured(comparison=base.comparison))
        yield Read("Baseline (speedup)", SPEEDUP, said, written or DASH)


def table_figures(view: View, row: ComparisonRow) -> Iterator[Read]:
    """The fleet table's cells of the View, the comparison table's of a stored run's row."""
    fleet = fleet_screen._cells(fleet_row("t", view))
    cells = dict(zip((c.key for c in fleet_screen.COLUMNS), fleet, strict=True))
    yield Read("fleet", DECODE, cells["decode"], _format(DECODE, view.decode.recent_tok_s))
    yield Read("fleet", ACCEPT, cells["accept"], _format(ACCEPT, view.spec.accept_length))
    yield Read("fleet", CYCLE, cells["cycle"], _format(CYCLE, view.spec.cycle_ms))
    # The speedup's value alone: the row carries no interval (a signed percent, one decimal).
    c = view.baseline.comparison
    value = SPEEDUP.value_text(c.speedup.value if c else None)
    yield Read("fleet", SPEEDUP, cells["speedup"], value)

    table = comparison_screen._cells(row)
    cells = dict(zip((c.key for c in comparison_screen.COLUMNS), table, strict=True))
    run = Measured(row.pooled, row.comparison)
    for key, f in (("decode", DECODE), ("accept", ACCEPT), ("cycle", CYCLE),
                   ("break_even", BREAK_EVEN)):  # fmt: skip
        yield Read("comparison", f, cells[key], f.written(run) or DASH)
    ends = f"[{_format(DECODE, row.decode_tok_s_min)}–{_format(DECODE, row.decode_tok_s_max)}]"
    yield Read("comparison (range)", DECODE, cells["range"], ends)
    # Its value and its interval in two columns: the speedup's text, split.
    gain = " ".join(cells[k] for k in ("speedup", "interval") if cells[k] != DASH)
    yield Read("comparison", SPEEDUP, gain, SPEEDUP.written(run) or DASH)


def _stored(h: History, store: Store) -> History:
    for snapshot in h.earlier or ():
        store.save(snapshot)
    base_id = store.save(h.base)
    return replace(h, base=next(s for s in store.list() if s.id == base_id))


def _run_row(h: History, store: Store) -> ComparisonRow:
    """The probes saved as one run, in the comparison table with its matched baseline."""
    spec_id = store.save(
        Snapshot(NOW, HERE, None, h.info, replace(PROTOCOL, runs=len(h.probes)), h.probes)
    )
    every = store.list()
    assert h.base.id is not None
    (row,) = comparison_rows(
        [s for s in every if s.id == spec_id],
        candidates=every,
        max_age_s=MAX_AGE_S,
        lifetimes={h.base.id: check_lifetime(h)},
    )
    return row


async def test_the_panels_write_every_catalogued_figure_as_the_catalogue(
    make_app: Callable[..., SpecmonApp], tmp_path: Path
) -> None:
    """Over random histories (baselines stale and fresh, targets down, restarted, failing their
    probe), every catalogued figure a panel or a table shows is the catalogue's text of the
    View's value: its digits, its sign, "—" when missing."""
    app = make_app()
    read: set[tuple[str, str]] = set()

    def check(reads: Iterator[Read], seed: object) -> None:
        for r in reads:
            assert r.said == r.expected, (seed, r)
            if r.said != DASH:
                read.add((r.surface, r.figure.key))

    async with app.run_test(size=(160, 50)) as pilot:
        # The real captures first: their streams time each step (the cycle's percentiles).
        await healthy()(pilot)
        assert app._last_view is not None
        check(panel_figures(app, app._last_view), "captures")
        for seed in SEEDS:
            with Store(tmp_path / f"db{seed}") as store:
                h = _stored(history(seed), store)
                view = live_session(h, store).view()
                row = _run_row(h, store)
            if seed % 8 == 0:  # the captures' ITL histogram starts in their second scrape
                itl = random.Random(seed).uniform(2.0, 60.0)
                view = replace(view, server=replace(view.server, itl_ms=itl))
            app.show_view(view)
            await pilot.pause()
            check(panel_figures(app, view), seed)
            check(table_figures(view, row), seed)
    # Each surface wrote its figures, not only dashes; together every figure but the speedup's
    # ends (within its text).
    assert {surface for surface, _ in read} == SURFACES
    keys = {key for _, key in read}
    catalogued = {f.key for f in CATALOGUE} - {"speedup low", "speedup high"}
    assert keys == catalogued | {f.key for f in SERVER_FIGURES}, keys


async def test_a_short_baseline_panel_writes_the_speedup_without_its_interval(
    make_app: Callable[..., SpecmonApp], tmp_path: Path
) -> None:
    """At 60x15 the Baseline panel says now and the speedup on one line (the deliberate
    exception): now to the catalogue's digits, the speedup's value as its text begins (the
    decimals its interval needs), the interval left out."""
    app = make_app()
    seen = 0
    async with app.run_test(size=(60, 15)) as pilot:
        await pilot.pause()
        for seed in SEEDS[:6]:
            with Store(tmp_path / f"db{seed}") as store:
                view = live_session(_stored(history(seed), store), store).view()
            app.show_view(view)
            await pilot.pause()
            base = view.baseline
            text = _body(app, BaselinePanel, "#baseline-body")
            if base.validity is not None and not base.validity.valid:  # its reasons instead
                assert not re.search("^now ", text, re.MULTILINE), text
                continue
            # "now …" leads where it fits beside the speedup and its verdict (`_headline`).
            now, gain = _groups(r"^(?:now ([+-]?\d+\.\d+|—) )?(?:(\S+%)|—)", text, "short Baseline")
            assert now in (None, _format(DECODE, base.current_tok_s))
            if base.comparison is None:
                assert gain is None
                continue
            written = SPEEDUP.written(Measured(comparison=base.comparison))
            assert gain == speedup_text(base.comparison.speedup, interval=False)
            assert written is not None and written.startswith(gain) and "[" not in text
            seen += 1
    assert seen > 0


def test_the_comparison_tables_speedup_reads_to_its_intervals_decimals() -> None:
    """A speedup within a tenth of a percent of its interval's ends: the `c` table's value
    column is written to the decimals its interval column needs, as the catalogue's text writes
    both (it read "+0.0%" beside "[-0.09%, +0.04%]")."""
    gain = Speedup(-0.0002, -0.0009, 0.0004)
    now = Pooled(3, 250.0, 0.001, 2.5, 10.0)
    row = ComparisonRow(
        7, HERE, NOW, None, None, "EAGLE", True, now, 249.0, 251.0,
        comparison=Comparison(250.05, 250.0, gain, verdict(gain), 2.5, 0.0),
    )  # fmt: skip
    cells = dict(
        zip((c.key for c in comparison_screen.COLUMNS), comparison_screen._cells(row), strict=True)
    )
    assert (cells["speedup"], cells["interval"]) == ("-0.02%", "[-0.09%, +0.04%]")
    written = SPEEDUP.written(Measured(now, row.comparison))
    assert f"{cells['speedup']} {cells['interval']}" == written
