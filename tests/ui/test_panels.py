"""Issue 14: what each panel says and how the dashboard uses the screen."""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import NOW, URL, baseline_snapshot, gpus, sample, server_info, server_metrics
from replay import replay_probe
from rich.console import Console
from rich.segment import Segment
from test_dashboard import healthy, push_server, stale
from textual.geometry import Region
from textual.renderables.sparkline import Sparkline as SparklineRenderable
from textual.widget import Widget
from textual.widgets import DataTable, ProgressBar, Static

from specmon.analysis.catalogue import CATALOGUE
from specmon.analysis.figures import run_figures
from specmon.backend_facts import facts
from specmon.measure.snapshot import SnapshotKind
from specmon.model import Protocol, Snapshot, Telemetry
from specmon.probe_prompts import DEFAULT_PROMPT, ProbePrompt
from specmon.session.feed import BENCH_CANCELLED
from specmon.session.view import BenchView, ServerView
from specmon.ui.app import SpecmonApp
from specmon.ui.columns import Column, cut, fit
from specmon.ui.fitting import left_out
from specmon.ui.screens.comparison import ComparisonScreen
from specmon.ui.screens.diagnostics import DiagnosticsScreen
from specmon.ui.widgets import server_panel
from specmon.ui.widgets.baseline_panel import BaselinePanel
from specmon.ui.widgets.decode_panel import DecodePanel
from specmon.ui.widgets.history_spark import (
    HistorySpark,
    bar_rows,
    braille_rows,
    scaled,
    spark_cells,
)
from specmon.ui.widgets.server_panel import ServerPanel
from specmon.ui.widgets.spec_panel import SpecPanel
from specmon.wording import speedup_text, validity_mark


async def test_diagnostics_name_an_unavailable_source(make_app: Callable[..., SpecmonApp]) -> None:
    """A GPU reading that answered "no NVML" is not "ok" on the `i` screen, and its reason
    wraps in its own column, under itself."""
    app = make_app()
    hint = "run `specmon agent` on the GPU box or pass --gpu-metrics URL"
    none = Telemetry("nvml", "NVML on this machine", unavailable="no NVML here", hint=hint)
    async with app.run_test(size=(60, 30)) as pilot:
        tick = sample(1.0, server_info(), server_metrics("spec/metrics"), telemetry=none)
        app.session.sample(tick)
        await pilot.pause()
        await pilot.press("i")
        assert isinstance(app.screen, DiagnosticsScreen)
        lines = [strip.text for strip in app.screen._compositor.render_strips()]
        row = next(y for y, line in enumerate(lines) if " gpu " in line)
        column = lines[row].index("unavailable:")
        assert " ok" not in lines[row]
        said: list[str] = []  # the reason's lines, up to the next name or the blank line
        for line in lines[row:]:
            head, tail = line[:column].strip(" █"), line[column:].rstrip(" █")
            if said and (head or not tail):
                break
            said.append(tail)
        assert len(said) > 1 and " ".join(said) == f"unavailable: no NVML here; {hint}"


async def test_snapshot_progress_is_not_a_baseline(make_app: Callable[..., SpecmonApp]) -> None:
    """`s` shows its runs on the Decode panel; the Baseline panel does not move."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.session.sample(sample(1.0, server_info(), server_metrics("spec/metrics")))
        await pilot.pause()
        app.session.bench_progress(BenchView("snapshot", 2, 5, 8.0))
        await pilot.pause()
        decode, baseline = app.query_one(DecodePanel), app.query_one(BaselinePanel)
        assert decode.border_subtitle == "snapshot run 2/5 · ETA 8s · Esc cancels"
        assert not baseline.border_subtitle and not baseline.query(ProgressBar)
        app.session.bench_failed(SnapshotKind.RUN, BENCH_CANCELLED)
        await pilot.pause()
        assert not decode.border_subtitle
        # Issue 38: Esc logged "baseline failed: cancelled"; the user's choice is no failure.
        last = app.session.live.events[-1]
        assert (last.level, last.text) == ("info", "snapshot cancelled: nothing saved")


def _blank_rows(app: SpecmonApp, widget: Widget) -> tuple[int, int]:
    """(blank content lines, content lines) of a widget as the screen shows it."""
    strips = app.screen._compositor.render_strips()
    region = widget.content_region
    lines = [strips[y].crop(region.x, region.right).text for y in range(region.y, region.bottom)]
    return sum(not line.strip() for line in lines), len(lines)


async def test_no_panel_is_mostly_empty_at_160x50(make_app: Callable[..., SpecmonApp]) -> None:
    """The screen's rows go to figures and sparklines: at most a third of any panel is blank."""
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        # Two 5 s steps later: the decode history has its first completed point, as in the demo.
        after = server_metrics("spec/metrics_after")
        app.session.sample(sample(6.0, server_info(), after, seq=3, telemetry=gpus()))
        await pilot.pause()
        for name in ("decode", "spec", "baseline", "server", "gpus", "events"):
            blank, height = _blank_rows(app, app.query_one(f"#{name}"))
            assert height > 0 and blank <= height / 3, f"{name}: {blank} of {height} rows blank"


async def test_server_panel_says_idle_and_what_each_figure_spans(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        text = str(app.query_one(ServerPanel).render())
        assert "tok/s (server, all requests, last 10 s)" in text
        assert "idle" not in text
        spec = str(app.query_one(SpecPanel).query_one("#spec-body").render())
        assert "server accept-rate gauge 70% (last 40 steps)" in spec
        busy = replace(server_metrics("spec/metrics_after"), num_running_reqs=1.0)
        app.session.sample(sample(14.0, server_info(), busy, seq=3))
        await pilot.pause()
        text = str(app.query_one(ServerPanel).render())
        assert "running 0 (idle; gauge still says 1)" in text
        assert "throughput idle (server" in text


@pytest.mark.parametrize(
    ("points", "width", "height"),
    [(60, 60, 1), (60, 120, 22), (60, 36, 4), (2, 2, 3), (1, 5, 2), (7, 7, 7)],
)
def test_bar_rows_draw_the_bars_textuals_sparkline_draws(
    points: int, width: int, height: int
) -> None:
    values = [random.Random(i).uniform(1.5, 3.0) for i in range(points)]
    textual = Segment.split_lines(
        Console(width=width).render(SparklineRenderable(values, width=width, height=height))
    )
    assert bar_rows(values, width, height) == ["".join(s.text for s in line) for line in textual]


@pytest.mark.parametrize("values", [[0.0], [0.0, 0.0, 0.0]])
def test_bar_rows_draw_nothing_of_an_idle_history(values: list[float]) -> None:
    """An idle server's 0 tok/s (caption "0–0") is no bar, not Textual's full-height one."""
    assert bar_rows(values, 4, 3) == ["    "] * 3


def test_braille_rows_fill_two_points_a_cell_four_levels_a_row() -> None:
    # 1, 2 and 8 of 8 dots over two rows: the lowest one dot, the highest the full height.
    assert braille_rows([1.0, 2.0, 3.0, 8.0], 2, 2) == [" ⢸", "⣠⣾"]
    rows = braille_rows([1.0, 8.0], 1, 2)
    assert rows == ["⢸", "⣸"]  # left: one dot (the lowest); right: all eight (the highest)
    assert braille_rows([5.0], 2, 1) == ["⣿⣿"]  # a lone value: full, as the block chart's
    assert braille_rows([3.0, 3.0, 3.0], 1, 1) == ["⣿"]  # constant: full, not one dot
    assert braille_rows([0.0, 0.0], 2, 2) == ["  ", "  "]  # idle: nothing


def test_braille_scale_sits_where_the_line_has_not_reached() -> None:
    rows = ["      ⣸", "      ⣿"]
    assert scaled(rows, "45", "41") == ["45    ⣸", "41    ⣿"]
    assert scaled(["  ⣸", "  ⣿"], "45.5", "41") == ["  ⣸", "  ⣿"]  # no room: left out


def test_spark_cells_keep_a_width_per_point() -> None:
    assert spark_cells(0, 60, 75) == (0, 1)
    assert spark_cells(2, 60, 75) == (2, 1)  # two points of 60: two cells, not the whole width
    assert spark_cells(2, 60, 150) == (4, 2)
    assert spark_cells(60, 60, 150) == (120, 2)
    assert spark_cells(60, 60, 36) == (36, 1)  # narrower than the history: summarised


async def test_decode_sparkline_is_not_stretched(make_app: Callable[..., SpecmonApp]) -> None:
    """Two points of a 5-minute history sit at the right edge, narrow, not a full-width block."""
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        panel = app.query_one(DecodePanel)
        assert panel.view is not None
        panel.view = replace(panel.view, history=(500.0, 800.0), history_points=60)
        await pilot.pause()
        spark = panel.query_one("#decode-spark", HistorySpark)
        per_point = spark.content_size.width // 60
        width, height = spark.size
        bottom = spark.render_lines(Region(0, height - 1, width, 1))[0].text
        drawn = width - 2 * per_point
        assert len(bottom) == width and bottom[:drawn].rstrip() == "500"  # the scale's low end
        assert " " not in bottom[drawn:]
        top = spark.render_lines(Region(0, 1, width, 1))[0].text  # under the caption
        assert top.startswith("800 ")


async def test_a_growing_sparkline_repaints_without_a_new_layout(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """A new point of the history redraws the sparkline only: a layout was most of idle CPU."""
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        panel = app.query_one(DecodePanel)
        assert panel.view is not None
        panel.view = replace(panel.view, history=(500.0, 800.0), history_points=60)
        await pilot.pause()
        spark = panel.query_one("#decode-spark", HistorySpark)
        region = spark.region
        layouts: list[bool] = []
        refresh = spark.refresh

        def spy(
            *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
        ) -> Widget:
            layouts.append(layout)
            return refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

        spark.refresh = spy  # type: ignore[method-assign]
        panel.view = replace(panel.view, history=(500.0, 800.0, 650.0), history_points=60)
        await pilot.pause()
        assert layouts and not any(layouts)
        assert spark.region == region


async def _store_snapshots(app: SpecmonApp) -> None:
    """A baseline (stale: too old) and a labelled speculative run against it."""
    assert app.session.store is not None
    app.session.store.save(replace(await baseline_snapshot(NOW - 45 * 60), id=None))
    runs = tuple(
        [run_figures(await replay_probe(f"spec/generate_stream_{i}.json")) for i in range(3)]
    )
    spec = Snapshot(
        NOW - 60, URL, "eagle try 2", server_info(), Protocol(3, 1, 256, 0.0, DEFAULT_PROMPT), runs
    )
    app.session.store.save(spec)


@pytest.mark.parametrize("size", [(60, 15), (80, 24), (160, 50)], ids=str)
async def test_comparison_keeps_decode_and_speedup_in_view(
    size: tuple[int, int], make_app: Callable[..., SpecmonApp]
) -> None:
    """The header shows decode and speedup at every size; a cut validity is in full below."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await _store_snapshots(app)
        await pilot.press("c")
        await pilot.pause()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ComparisonScreen)
        table = screen.query_one(DataTable)
        strips = screen._compositor.render_strips()
        region = table.content_region
        header = strips[region.y].crop(region.x, region.right).text
        for label in ("#", "config", "decode", "speedup", "verdict", "validity"):
            assert label in header, header
        # Issue 38: at 80 columns the label (what `s` asked for) was left out.
        assert ("label" in header) == (size[0] >= 80), header
        assert "break-e" not in header or "break-even" in header  # no column cut at the edge
        assert table.virtual_size.width <= region.width  # nothing behind a → press
        await pilot.press("down")
        await pilot.pause()
        row = str(screen.query_one("#comparison-row", Static).render())
        validity = validity_mark(screen.rows[1].validity)
        assert validity is not None
        assert validity.startswith("✗ too old: taken 44 min before the run (> 30 min)")
        assert f"#2 · winning · validity: {validity}" in row


async def test_comparison_exports_numbers_for_scripts_and_text_for_people(
    make_app: Callable[..., SpecmonApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """v and j write what a script reads (ratios, true/false), e Markdown for people; each row
    names the category of its prompt, by the dashboard's --probe-prompts before the built-in."""
    monkeypatch.chdir(tmp_path)
    app = make_app()
    # The user's file names the prompt the snapshots were taken with (else it reads "general").
    mine = (ProbePrompt("mine", DEFAULT_PROMPT),)
    app.session.config = replace(app.session.config, probe_prompts=mine)
    async with app.run_test(size=(120, 30)) as pilot:
        await _store_snapshots(app)
        await pilot.press("c")
        await pilot.pause()
        for key in "evj":
            await pilot.press(key)
            await pilot.pause()
    exported = _exported(tmp_path)
    _, spec = csv.DictReader(io.StringIO(exported["csv"]))  # the baseline, then the run
    float(spec["speedup_ratio"])  # a number, not "+23.2% [+16.1%, +30.8%]"
    assert spec["baseline_valid"] == "false"
    row = json.loads(exported["json"])["rows"][1]
    assert row["baseline_valid"] is False and isinstance(row["speedup_ratio"], float)
    assert spec["category"] == row["category"] == "mine"
    assert "| ✗ too old: taken 44 min before the run (> 30 min) |" in exported["md"]


def _exported(folder: Path) -> dict[str, str]:
    """The text of each export written to `folder`, by suffix (one of each)."""
    files = {path.suffix[1:]: path for path in folder.glob("specmon-comparison-*")}
    assert sorted(files) == ["csv", "json", "md"]
    return {suffix: path.read_text(encoding="utf-8") for suffix, path in files.items()}


def test_columns_fit_essentials_first() -> None:
    columns = [Column("a", "a", essential=True), Column("b", "bbbb", rank=0),
               Column("c", "c", essential=True, min_width=3)]  # fmt: skip
    cells = [("1", "22", "long validity text")]
    assert fit(columns, cells, 100) == [1, 4, 18]
    assert fit(columns, cells, 12) == [1, 0, 7]  # no room for b: c takes what is left
    assert fit(columns, cells, 5) == [1, 0, 3]  # c at its minimum, even over the width
    assert cut("long validity text", 7) == "long v…"


async def test_a_resize_under_a_modal_lays_the_dashboard_out(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Shrunk while `c` is open, the dashboard comes back laid out for the new size."""
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        dashboard = app.screen
        assert dashboard.has_class("-tall")
        await pilot.press("c")
        await pilot.resize_terminal(80, 24)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is dashboard
        assert dashboard.has_class("-compact") and not dashboard.has_class("-tall")


async def test_a_tiny_terminal_keeps_the_speedup_and_break_even(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """At 60x15 the Baseline panel shows now, the speedup and its verdict (the ratio of the two
    numbers shown) and the Speculation panel the break-even, each on a line of its own."""
    app = make_app()
    async with app.run_test(size=(60, 15)) as pilot:
        await healthy()(pilot)
        strips = app.screen._compositor.render_strips()

        def shown(name: str) -> list[str]:
            region = app.query_one(f"#{name}").content_region
            return [
                strips[y].crop(region.x, region.right).text.strip()
                for y in range(region.y, region.bottom)
            ]

        # The headline first (issue 38: at 12 rows it was below the panel's last line).
        now_line, base = shown("baseline")[0], shown("baseline")[2]
        assert now_line.startswith("now ") and now_line.endswith("winning"), shown("baseline")
        base_tok_s = float(base.split()[1])
        now_tok_s, gain = float(now_line.split()[1]), float(now_line.split()[2].rstrip("%"))
        assert abs((now_tok_s / base_tok_s - 1) * 100 - gain) < 0.2
        assert any(line.startswith("break-even 1.") for line in shown("spec"))


@pytest.mark.parametrize("size", [(60, 24), (59, 24), (50, 24), (40, 30)], ids=str)
async def test_a_narrow_baseline_panel_drops_its_bars_not_the_app(
    size: tuple[int, int], make_app: Callable[..., SpecmonApp]
) -> None:
    """Issue 25: too narrow for the base/now bars (60x24 crashed on a negative bar width), the
    panel says now and the speedup on one line, as the short panel does; a short one too narrow
    for "now …" too (40x30) keeps the speedup and its verdict (issue 38)."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await healthy()(pilot)
        panel = app.query_one(BaselinePanel)
        lines = str(panel.query_one("#baseline-body", Static).render()).splitlines()
        headline = lines[0]
        assert headline.endswith("% winning"), lines
        assert headline.startswith("now ") or size == (40, 30), lines


def test_left_out_goes_in_order_and_brings_back_what_still_fits() -> None:
    widths = {"a": 5, "b": 1, "c": 1, "d": 20}
    order = ("b", "c", "d", "a")

    def fits(out: frozenset[str]) -> bool:
        return sum(w for name, w in widths.items() if name not in out) <= 7

    assert left_out(order, fits) == {"d"}  # b and c went before d did, and come back
    assert left_out(order, lambda out: True) == frozenset()
    assert left_out(order, lambda out: False) == set(order)  # never fits: all go


async def test_a_narrow_stale_baseline_says_why(make_app: Callable[..., SpecmonApp]) -> None:
    """At 60x24 the panel is tall but narrow: the short panel's lines, wrapped, so that every
    reason the baseline is stale is in view (the spread and the speedup line pushed them out)."""
    app = make_app()
    async with app.run_test(size=(60, 24)) as pilot:
        await stale()(pilot)
        panel = app.query_one(BaselinePanel)
        region = panel.content_region
        strips = app.screen._compositor.render_strips()
        shown = " ".join(
            strips[y].crop(region.x, region.right).text.strip()
            for y in range(region.y, region.bottom)
        )
        view = panel.view
        assert view is not None and view.validity is not None and len(view.validity.reasons) == 2
        assert "✗ STALE 45m old" in shown and "  " not in shown  # issue 38: `·  ✗ STALE`
        for reason in view.validity.reasons:
            assert " ".join(reason.split()) in shown, shown


async def test_the_decode_sparkline_says_whose_rate_it_is(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Issue 25: "server decode tok/s … 21–43" under a 79 tok/s headline read as a contradiction.
    The headline is one probe stream's speed; the sparkline the server's output over all its
    requests (idle time included); the caption says so, its range before its source."""
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        after = server_metrics("spec/metrics_after")
        app.session.sample(sample(6.0, server_info(), after, seq=3, telemetry=gpus()))
        await pilot.pause()
        decode = app.query_one(DecodePanel)
        spark = decode.query_one(HistorySpark)
        caption = app.screen._compositor.render_strips()[spark.region.y]
        text = caption.crop(spark.region.x, spark.region.right).text.strip()
        assert text.startswith("server tok/s, all requests, 5 min · "), text
        assert text.endswith(f"({decode.view.history_source})")  # type: ignore[union-attr]
        assert "(probe)" in str(decode.border_title)


async def test_a_short_baseline_panel_grown_taller_shows_every_line(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """60x15 then 60x24 (a tmux pane dragged taller): the panel's lines wrap again and take the
    height they need (the last, the baseline's origin, was left out: the body kept the height
    of its unwrapped lines)."""
    app = make_app()
    async with app.run_test(size=(60, 15)) as pilot:
        await healthy()(pilot)
        await pilot.resize_terminal(60, 24)
        await pilot.pause()
        panel = app.query_one(BaselinePanel)
        region = panel.content_region
        strips = app.screen._compositor.render_strips()
        shown = " ".join(
            strips[y].crop(region.x, region.right).text.strip()
            for y in range(region.y, region.bottom)
        )
        assert shown.strip().endswith("· the baseline server"), shown


async def test_diagnostics_say_where_the_probe_acceptance_came_from(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """SGLang's probes carry its per-request histogram: the `i` screen names it as the source."""
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await push_server(pilot)
        await pilot.pause()
        await pilot.press("i")
        assert isinstance(app.screen, DiagnosticsScreen)
        text = " ".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "Where the last probe's acceptance came from" in text
        words = " ".join(text.split())
        assert "acceptance by position: per-request details" in words
        assert "server accept length: per-request details" in words


async def test_an_adaptive_server_turning_drafting_off_is_said(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Its gauges at 0 steps (draft tokens 1) for 6 s, past the switch's hold (`HOLD_S`): the
    Speculation panel says OFF at this load, and the events log has the switch, once."""
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        after = server_metrics("spec/metrics_after")
        spec = str(app.query_one(SpecPanel).query_one("#spec-body").render())
        assert "drafting" not in spec  # it drafts its flags' k: nothing to say
        for i in range(1, 8):
            passes = (after.decode_passes_total or 0) + 1000 * i
            off = replace(
                after,
                decode_passes_total=passes,
                spec_num_steps=0.0,
                spec_num_draft_tokens=1.0,
                num_running_reqs=16.0,
            )
            app.session.sample(sample(2.0 + i, server_info(), off, seq=2 + i))
            await pilot.pause()
        spec = str(app.query_one(SpecPanel).query_one("#spec-body").render())
        assert "drafting OFF at this load" in spec, spec
        texts = [e.text for e in app.session.live.events if "drafting" in e.text]
        assert texts == ["server: drafting k 3 → off (speculation off at this load; 16 running)"]


async def test_diagnostics_list_every_figure_of_the_catalogue(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """The `i` screen's "Every figure now": each catalogued figure (`analysis.catalogue`) of
    the recent probes and their comparison, the numbers the panels show."""
    app = make_app()
    async with app.run_test(size=(120, 60)) as pilot:
        await healthy()(pilot)
        decode = app.query_one(DecodePanel).view
        baseline = app.query_one(BaselinePanel).view
        assert decode is not None and baseline is not None and baseline.comparison is not None
        await pilot.press("i")
        assert isinstance(app.screen, DiagnosticsScreen)
        text = " ".join(strip.text for strip in app.screen._compositor.render_strips())
        words = " ".join(text.split())
        figures = words.split("Every figure now", 1)[1]
        assert f"decode tok/s: {decode.recent_tok_s:.1f} tok/s" in figures
        assert f"speedup: {speedup_text(baseline.comparison.speedup)}" in figures
        assert len(app.screen.view.figures) == len(CATALOGUE)
        for figure in CATALOGUE:
            assert f"{figure.key}:" in figures, figure.key


@pytest.mark.parametrize(
    ("backend", "label"), [("sglang", "ITL 13.6 ms"), ("vllm", "ITL/step 27.6 ms")]
)
def test_the_itl_says_per_step_where_the_server_observes_it_per_step(
    backend: str, label: str
) -> None:
    """vLLM's inter-token histogram observes once per engine step (a draft+verify cycle),
    SGLang's once per token: only vLLM's reads per step (issue 38)."""
    per_step = facts(backend).itl_per_step
    itl = 27.6 if per_step else 13.6
    view = ServerView(1.0, 0.0, 0.1, 70.0, "counter", 40.0, itl, "ok", itl_per_step=per_step)
    assert any(line.startswith(label) for line in server_panel._lines(view))
    assert label in server_panel._compact(view)[2]


async def test_diagnostics_say_they_scroll_while_they_do(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """At 60x15 the `i` screen runs past its last line and its border names the keys that
    scroll it; at 160x50 it all shows and the border names Esc only; a live resize follows."""
    app = make_app()
    async with app.run_test(size=(60, 15)) as pilot:
        app.session.sample(sample(1.0, server_info(), server_metrics("spec/metrics")))
        await pilot.pause()
        await pilot.press("i")
        dialog = app.screen.query_one("#dialog")

        def bottom() -> str:
            lines = [strip.text for strip in app.screen._compositor.render_strips()]
            return next(line for line in reversed(lines) if "Esc: close" in line)

        await pilot.pause()
        assert dialog.max_scroll_y > 0 and "↑↓ PgDn: more · Esc: close" in bottom()
        await pilot.resize_terminal(160, 50)
        await pilot.pause()
        assert dialog.max_scroll_y == 0 and "more" not in bottom()
        await pilot.resize_terminal(60, 15)
        await pilot.pause()
        assert "↑↓ PgDn: more · Esc: close" in bottom()
        await pilot.press("down", "pagedown")
        assert dialog.scroll_y > 0
