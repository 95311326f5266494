"""The dashboard, driven by hand-pushed messages built from real SGLang 0.5.17 captures.

SVG snapshots at 80x24 and 160x50 for the states a user must be able to read at a glance, and
Pilot tests asserting what the widgets say. No test waits on wall time: the app's workers are
off and every message is pushed by the test.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import (
    BASE_URL,
    NOW,
    baseline_snapshot,
    gpus,
    sample,
    server_info,
    server_metrics,
)
from replay import replay_probe
from textual.pilot import Pilot
from textual.widgets import DataTable, ProgressBar, Static
from tuned import needs

from specmon.analysis.figures import run_figures
from specmon.measure.snapshot import SnapshotKind
from specmon.session.baselines import BaselineOrigin
from specmon.session.store_baseline import STORE_LOOKUP_EVERY_S
from specmon.session.view import BenchView
from specmon.session.watch import ProbeOutcome
from specmon.ui.app import SpecmonApp
from specmon.ui.screens.help import KEYS, HelpScreen
from specmon.ui.screens.whatif import WhatIfScreen
from specmon.ui.widgets.baseline_panel import BaselinePanel
from specmon.ui.widgets.gpu_panel import GpuPanel
from specmon.ui.widgets.identity_bar import IdentityBar
from specmon.ui.widgets.server_panel import ServerPanel
from specmon.ui.widgets.spec_panel import SpecPanel
from specmon.whatif.text import LABELS

SIZES = [(60, 15), (60, 24), (80, 24), (160, 50)]
REFUSED = "http://10.1.230.174:8000/server_info: connection refused (nothing listening?)"
METRICS_OFF = (
    "http://10.1.230.174:8000/metrics: 404 — metrics are off; start the server with "
    "--enable-metrics"
)


async def push_server(pilot: Pilot[None], *, metrics: bool = True) -> None:
    """Two ticks of a healthy speculative server, then three real probe runs."""
    app = pilot.app
    if metrics:
        app.session.sample(sample(1.0, server_info(), server_metrics("spec/metrics")))
        await pilot.pause()
        after = server_metrics("spec/metrics_after")
        app.session.sample(sample(2.0, server_info(), after, seq=2, telemetry=gpus()))
    else:
        app.session.sample(sample(2.0, server_info(), None, metrics_error=METRICS_OFF))
    for i in range(3):
        result = await replay_probe(f"spec/generate_stream_{i}.json")
        app.session.probe_done(ProbeOutcome(NOW - 3 + i, float(i), run_figures(result), result))


async def push_baseline(app: SpecmonApp, age_s: float = 120.0, **arg_changes: object) -> None:
    """A baseline from the real plain captures."""
    snapshot = await baseline_snapshot(NOW - age_s, **arg_changes)
    app.session.bench_done(snapshot, SnapshotKind.BASELINE, BaselineOrigin.BASELINE_SERVER)
    plain = server_info("plain", **arg_changes)
    app.session.baseline_sample(sample(2.5, plain, server_metrics("plain/metrics_after")))


def healthy() -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run(pilot: Pilot[None]) -> None:
        await push_server(pilot)
        await push_baseline(pilot.app)  # type: ignore[arg-type]
        await pilot.pause()

    return run


def stale() -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run(pilot: Pilot[None]) -> None:
        app: SpecmonApp = pilot.app  # type: ignore[assignment]
        await push_server(pilot)
        await push_baseline(app, age_s=45 * 60, mem_fraction_static=0.5)
        await pilot.pause()

    return run


def metrics_off() -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run(pilot: Pilot[None]) -> None:
        await push_server(pilot, metrics=False)
        await pilot.pause()

    return run


def server_down() -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run(pilot: Pilot[None]) -> None:
        app: SpecmonApp = pilot.app  # type: ignore[assignment]
        await push_server(pilot)
        await pilot.pause()
        info, metrics = server_info(), server_metrics("spec/metrics_after")
        down = sample(9.0, info, metrics, seq=2, info_error=REFUSED, metrics_error=REFUSED)
        app.session.sample(down)
        await pilot.pause()

    return run


def waiting() -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run(pilot: Pilot[None]) -> None:
        await push_server(pilot)
        await pilot.pause()
        await pilot.press("b")  # speculation on, no baseline server: the choices
        await pilot.press("w")  # wait for the restart without speculation
        await pilot.pause()

    return run


SCENARIOS = {
    "healthy": (healthy, True),
    "stale_baseline": (stale, True),
    "metrics_off": (metrics_off, True),
    "server_down": (server_down, True),
    "waiting_for_baseline": (waiting, False),
}


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_snapshot(
    scenario: str,
    size: tuple[int, int],
    snap_compare: Callable[..., bool],
    make_app: Callable[..., SpecmonApp],
) -> None:
    make_run, with_baseline_server = SCENARIOS[scenario]
    app = make_app(BASE_URL if with_baseline_server else None)
    assert snap_compare(app, terminal_size=size, run_before=make_run())


async def test_healthy_figures(make_app: Callable[..., SpecmonApp]) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await healthy()(pilot)
        view = app._last_view
        assert view is not None
        assert view.identity.state == "live"
        assert view.identity.speculation == "NGRAM steps=0 topk=10 draft=4"
        # The probe figures are the real captures' own (see tests/sources/test_probe.py).
        assert view.spec.accept_length is not None and 2.7 < view.spec.accept_length < 3.4
        validity, comparison = view.baseline.validity, view.baseline.comparison
        assert validity is not None and validity.confirmed
        assert comparison is not None and comparison.speedup.value > 0
        assert view.spec.break_even is not None and view.spec.margin is not None
        # What the panel prints: speedup = now / base − 1 of the two figures beside it.
        assert view.baseline.tok_s is not None and view.baseline.current_tok_s is not None
        shown = view.baseline.current_tok_s / view.baseline.tok_s - 1
        assert comparison.speedup.value == pytest.approx(shown)
        body = str(app.query_one(BaselinePanel).query_one("#baseline-body").render())
        base, now = f"{view.baseline.tok_s:6.1f}", f"{view.baseline.current_tok_s:6.1f}"
        assert base in body and now in body
        assert f"{float(now) / float(base) - 1:+.1%}"[:-2] in body  # to the printed precision
        assert "✓ valid" in str(app.query_one(BaselinePanel).query_one("#baseline-body").render())


async def test_progress_bar_only_while_a_baseline_is_taken(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Run k of n with its ETA; no bar (and none of its timers) before or after."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await push_server(pilot)
        panel = app.query_one(BaselinePanel)
        await pilot.pause()
        assert not panel.query(ProgressBar)
        app.session.bench_progress(BenchView("baseline", 1, 3, 20.0))
        await pilot.pause()
        bar = panel.query_one(ProgressBar)
        assert (bar.progress, bar.total) == (1, 3)
        assert panel.border_subtitle == "run 1/3 · ETA 20s"
        app.session.bench_progress(BenchView("baseline", 2, 3, 10.0))
        await pilot.pause()
        assert panel.query_one(ProgressBar).progress == 2
        await push_baseline(app)
        await pilot.pause()
        assert not panel.query(ProgressBar)
        assert not panel.border_subtitle


@needs("gc_deferral")
async def test_long_lived_objects_are_frozen_while_it_runs(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Its widgets and modules stay out of full collections (ui/tuning/gc_deferral.py) until it
    quits."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        collected = {id(o) for o in gc.get_objects()}  # every generation but the frozen one
        panels = list(app.query("#panels *"))
        assert panels and [w for w in panels if id(w) in collected] == []
    assert gc.get_freeze_count() == 0


async def test_stale_baseline_names_every_reason(make_app: Callable[..., SpecmonApp]) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await stale()(pilot)
        validity = app._last_view.baseline.validity  # type: ignore[union-attr]
        assert validity is not None and not validity.valid
        assert validity.reasons == (
            "flags differ: mem_fraction_static",
            "too old (45 min > 30 min)",
        )
        assert app.query_one(BaselinePanel).has_class("stale")
        assert app._last_view.spec.break_even is None  # type: ignore[union-attr]


async def test_baseline_server_restart_makes_the_baseline_stale(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await healthy()(pilot)
        plain, after = (
            server_metrics("plain/metrics_after"),
            server_metrics("plain_metrics_after_restart.txt"),
        )
        app.session.baseline_sample(sample(3.0, server_info("plain"), plain))
        await pilot.pause()
        validity = app._last_view.baseline.validity  # type: ignore[union-attr]
        assert validity is not None and validity.confirmed
        app.session.baseline_sample(sample(4.0, server_info("plain"), after, seq=2))
        await pilot.pause()
        view = app._last_view
        assert view is not None and view.baseline.validity is not None
        assert not view.baseline.validity.valid
        assert "restarted since" in view.baseline.validity.reasons[0]
        assert any("baseline server restarted" in e.text for e in view.events)


async def test_metrics_off_says_how_to_fix(make_app: Callable[..., SpecmonApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await metrics_off()(pilot)
        text = str(app.query_one(ServerPanel).render())
        assert "--enable-metrics" in text
        assert ("server figures", METRICS_OFF) in app._last_view.missing  # type: ignore[union-attr]


async def test_server_down_then_back_is_a_restart(make_app: Callable[..., SpecmonApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await server_down()(pilot)
        assert app._last_view.identity.state == "down"  # type: ignore[union-attr]
        assert "connection refused" in str(app.query_one(IdentityBar).render())
        back = sample(12.0, server_info(), server_metrics("spec/metrics_after"), seq=3)
        app.session.sample(back)
        await pilot.pause()
        view = app._last_view
        assert view is not None and view.identity.state == "live"
        assert any("back after an outage" in e.text for e in view.events)
        assert view.decode.decode_tok_s is None  # probes of the old lifetime were dropped


async def test_waiting_then_plain_restart_takes_the_baseline(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await waiting()(pilot)
        assert app.session.live.baseline.waiting
        assert "waiting" in str(app.query_one(BaselinePanel).query_one("#baseline-body").render())
        await pilot.press("escape")
        assert not app.session.live.baseline.waiting


async def test_spec_off_server_has_no_speculative_figures(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.session.sample(sample(1.0, server_info("plain"), server_metrics("plain/metrics")))
        await pilot.pause()
        body = app.query_one(SpecPanel).query_one("#spec-body")
        assert "speculation is off" in str(body.render())


async def test_eight_gpus_fit_at_80x24_and_are_listed_when_wide(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await push_server(pilot)
        await pilot.pause()
        panel = app.query_one(GpuPanel)
        assert panel.size.height == 1
        assert str(panel.render()).startswith("GPUs: 8 × H100 80GB HBM3, max util 97%")
        await pilot.resize_terminal(160, 50)
        await pilot.pause()
        app.refresh_view()
        await pilot.pause()
        text = str(panel.render())
        assert all(f"GPU {i} H100" in text for i in range(8))
    assert len(gpus().gpus) == 8


async def test_keys_answer_and_probe_pauses(make_app: Callable[..., SpecmonApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        assert app.session.live.probe_paused
        assert app._last_view.decode.probe_state == "paused (p)"  # type: ignore[union-attr]
        await pilot.press("p", "t")
        assert not app.session.live.probe_paused
        assert app.theme != "specmon-dark"
        await pilot.press("question_mark")
        assert app.screen.__class__.__name__ == "HelpScreen"
        await pilot.press("escape", "i")
        assert app.screen.__class__.__name__ == "DiagnosticsScreen"
        await pilot.press("escape", "c")
        assert app.screen.__class__.__name__ == "ComparisonScreen"


async def test_a_click_on_the_keys_line_runs_the_key(make_app: Callable[..., SpecmonApp]) -> None:
    """The keys line is one line of text; its keys still answer the mouse, as the footer's did."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        keys = str(app.query_one("#keys", Static).content)
        assert keys.startswith(" b baseline  s snapshot  c compare  w what-if  p probe ")
        await pilot.click("#keys", offset=(keys.index(" p ") + 1, 0))
        assert app.session.live.probe_paused
        await pilot.click("#keys", offset=(keys.index(" ? ") + 1, 0))
        assert app.screen.__class__.__name__ == "HelpScreen"


@pytest.mark.parametrize(
    ("width", "keys"),
    [
        (
            160,
            " b baseline  s snapshot  c compare  w what-if  p probe  f freeze  z zoom  d dump  "
            "/ filter  t theme  i why —  ? help  q quit ",
        ),
        (80, " b baseline  s snapshot  c compare  w what-if  p probe  i why —  ? help  q quit "),
        (60, " b baseline  c compare  w what-if  i why —  ? help  q quit "),
        (40, " b baseline  w what-if  ? help  q quit "),
    ],
)
async def test_the_keys_line_fits_with_a_word_for_every_key_it_lists(
    width: int, keys: str, make_app: Callable[..., SpecmonApp]
) -> None:
    """Issue 25: at 60 columns `? help` and `q quit` were cut and `w` was never listed; issue 38:
    at 80 the line then read `s  c compare  w what-if  p  f  z  d  /  t`, seven bare keys. A
    narrow line lists the most useful keys, each with its word; `? help` lists them all."""
    app = make_app()
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.resize_terminal(width, 24)  # the words follow a live resize
        shown = str(app.query_one("#keys", Static).content)
        assert shown == keys and len(shown) <= width


async def test_read_only_turns_off_and_says_so_every_key_that_benches_or_writes(
    make_app: Callable[..., SpecmonApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`specmon web` off loopback (or `--readonly`): b, s and the comparison's exports do
    nothing but say they are off; the keys line leaves b and s out and says read-only."""
    monkeypatch.chdir(tmp_path)  # where an export would land
    app = make_app(read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        keys = str(app.query_one("#keys", Static).content)
        assert keys == (
            " c compare  w what-if  f freeze  / filter  i why —  ? help  q quit  read-only "
        )
        await pilot.press("b", "s", "p")
        await pilot.pause()
        assert not app.bench_running() and len(app.screen_stack) == 1  # no bench, no label prompt
        assert not app.session.live.probe_paused  # issue 36: p paused the probe for every tab
        said = [n.message for n in app._notifications]
        assert said == [
            *(f"read-only: {key} is off in this dashboard (it benches or saves)" for key in "bs"),
            "read-only: p is off in this dashboard (it pauses the probe every viewer shares)",
        ]
        await pilot.press("c")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ComparisonScreen"
        await pilot.press("e", "v", "j")
        await pilot.pause()
        status = str(app.screen.query_one("#comparison-status", Static).content)
        assert status == "read-only: exports are off in this dashboard · Esc: close"
    assert not [name for name in os.listdir(tmp_path) if name.startswith("specmon-comparison-")]


async def test_read_only_help_marks_the_keys_it_turned_off(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Issue 29: `?` in a read-only tab listed b and s as if they worked."""
    app = make_app(read_only=True)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = dict(app.screen.keys)
        off = {key for key, does in rows.items() if does.startswith("off in this read-only")}
        assert off == {"b", "s", "d", "e", "v", "j", "p"}
        assert rows["b"].startswith("off in this read-only dashboard (it benches): take a fresh")
        assert rows["c"] == dict(KEYS)["c"]


@pytest.mark.parametrize("width", [40, 60, 80, 160])
async def test_the_identity_keeps_state_address_and_speculation_in_two_lines(
    width: int, make_app: Callable[..., SpecmonApp]
) -> None:
    """Issue 25: at 60 columns the third line, with `draft=3`, was cut; now the version, then
    the uptime, tp and the model make way, and come back as the width allows."""
    app = make_app()
    info = server_info(served_model_name="meta-llama/Llama-3.3-70B-Instruct", tp_size=8)
    async with app.run_test(size=(width, 15)) as pilot:
        app.session.sample(sample(1.0, info, server_metrics("spec/metrics")))
        await pilot.pause()
        bar = app.query_one(IdentityBar)
        view = bar.view
        assert view is not None and view.title is not None
        shown = bar.render_lines(bar.region.reset_offset)
        text = " ".join(line.text.strip() for line in shown)
        assert len(shown) <= 2 and bar.region.height == len(shown)
        for part in (f"● {view.state}", view.url.split("://")[1], view.speculation):
            assert part in text, text
        assert (view.title in text) == (width >= 80), text


@pytest.mark.parametrize("size", [(60, 24), (80, 24), (120, 30), (160, 50)], ids=str)
async def test_whatif_columns_fit_and_the_rest_are_under_the_table(
    size: tuple[int, int], make_app: Callable[..., SpecmonApp]
) -> None:
    """Issue 25: at 80x24 the intervals, break-even and flag ran off the screen (and the flag at
    160x50). Now k, decode, speedup, break-even and the notes always show, the others while
    they fit whole, and the highlighted row's others are written out under the table."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await healthy()(pilot)
        await pilot.press("w")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        table = screen.query_one(DataTable)
        assert table.virtual_size.width <= table.content_region.width  # nothing behind a →
        shown = [str(c.label) for c in table.columns.values()]
        assert {"k", "decode tok/s", "speedup", "break-even", ""} <= set(shown)
        assert ("flag" in shown) == (size[0] >= 120)
        await pilot.press("down")
        cells = screen.cells[1]
        line = str(screen.query_one("#whatif-row", Static).render())
        for key, label in LABELS.items():
            if label not in shown:
                assert f"{label} {cells[key]}" in line, line
            elif key != "notes":  # the notes may be cut ("bes…"): the others show whole
                assert str(table.get_row_at(1)[shown.index(label)]) == cells[key]
        status = str(screen.query_one("#whatif-status", Static).render())
        assert status.startswith("↑↓") == (len(shown) < len(LABELS))


async def test_whatif_screen_predicts_other_draft_lengths(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """`w` on the real NGRAM captures (4 draft tokens: 3 drafts per step): a row per draft length
    1 … 5, the measured one marked, and the speedup of each row its decode over the baseline's."""
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        spec = app._last_view.spec  # type: ignore[union-attr]
        assert spec.positions is not None and len(spec.positions.rates) == 3
        assert "by position 0" in str(app.query_one(SpecPanel).query_one("#spec-body").render())
        await pilot.press("w")
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        result = screen.view.answer.result
        assert result is not None and result.draft_tokens == 3, screen.view.answer.reason
        assert [p.draft_tokens for p in result.predictions] == [1, 2, 3, 4, 5]
        base = app._last_view.baseline.tok_s  # type: ignore[union-attr]
        for p in result.predictions:
            assert p.speedup == pytest.approx(p.decode_tok_s / base - 1)
        table = screen.query_one(DataTable)
        assert table.row_count == 5
        assert "measured" in [str(c) for c in table.get_row_at(2)][-2]
        notes = str(screen.query_one("#whatif-notes", Static).render())
        assert "acceptance by position (histogram" in notes
        assert "cycle model (fixed)" in notes  # NGRAM: one cycle, the lookup assumption
        # The captures' running gauge reads 0 at both scrapes: idle, so no band yet.
        assert "by load: no decode seen with a running-requests gauge yet" in notes
        await pilot.press("escape")
        assert not isinstance(app.screen, WhatIfScreen)


async def test_no_baseline_applies_names_the_nearest_and_a_later_one_is_found(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Issue 24 §6: the dashboard looks its baseline up as the fleet does (`StoreBaseline`):
    the panel names #1 and why it does not apply (the probe's protocol), and a baseline saved
    later is found a minute on (it was looked up once only)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.session.store is not None
        plain = await baseline_snapshot(NOW - 60)
        long = replace(plain, protocol=replace(plain.protocol, max_tokens=500), id=None)
        first = app.session.store.save(long)
        app.session.sample(sample(1.0, server_info(), None))
        await pilot.pause()
        why = (
            f"no baseline applies (--baseline-url): #{first} ({plain.url}) was taken with "
            "max_tokens 500, the probe uses 256"
        )
        assert app.session.live.baseline.snapshot is None
        assert app.query_one(BaselinePanel).view.why_none == why
        body = app.query_one(BaselinePanel).query_one("#baseline-body").render()
        assert why in " ".join(str(body).split())
        found = app.session.store.save(replace(plain, id=None))
        app.session.sample(sample(1.0 + STORE_LOOKUP_EVERY_S, server_info(), None, seq=2))
        await pilot.pause()
        baseline = app.session.live.baseline.snapshot
        assert baseline is not None and baseline.id == found


@pytest.mark.parametrize("key", ["question_mark", "i", "c", "w", "b", "s"])
async def test_every_dialog_says_how_to_close_it_at_60x15(
    key: str, make_app: Callable[..., SpecmonApp]
) -> None:
    """Issue 25: at 60x15 help, `i`, what-if and the baseline choice had their way out under the
    terminal's last line; now it is on their border or docked at their foot."""
    app = make_app(None if key == "b" else BASE_URL)  # no baseline server: b explains the choices
    async with app.run_test(size=(60, 15)) as pilot:
        await push_server(pilot)
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        assert app.screen is not app.screen_stack[0]
        text = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "Esc" in text, text


@pytest.mark.parametrize("key", ["ctrl+c", "f10", "q"])
async def test_the_keys_htop_users_press_quit(
    key: str, make_app: Callable[..., SpecmonApp]
) -> None:
    """Issue 38: Ctrl-C showed Textual's "press ctrl+q to quit"; htop, btop, k9s and nvitop
    quit on it (and on F10)."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key)
        await pilot.pause()
        assert app.return_code == 0 and not app._notifications


@pytest.mark.parametrize("key", ["f1", "h", "question_mark"])
async def test_f1_and_h_open_the_help_and_close_it(
    key: str, make_app: Callable[..., SpecmonApp]
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key)
        await pilot.pause()
        assert app.screen.__class__.__name__ == "HelpScreen"
        await pilot.press(key)
        await pilot.pause()
        assert len(app.screen_stack) == 1


async def test_a_dead_server_s_figures_are_dimmed_and_said_to_be_the_last_seen(
    make_app: Callable[..., SpecmonApp],
) -> None:
    """Issue 38: the big tok/s and the speedup stayed as they were while the header said down."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await healthy()(pilot)
        decode, baseline = app.query_one("#decode"), app.query_one(BaselinePanel)
        assert "(probe)" in str(decode.border_title) and not decode.has_class("-down")
        app.session.sample(
            sample(9.0, None, None, seq=3, info_error=REFUSED, metrics_error=REFUSED)
        )
        await pilot.pause()
        assert app.session.view().identity.state == "down"
        assert decode.has_class("-down") and baseline.has_class("-down")
        assert "(last seen)" in str(decode.border_title)
        assert decode.query_one("#decode-digits").styles.text_opacity < 1
        app.session.sample(sample(10.0, server_info(), server_metrics("spec/metrics"), seq=4))
        await pilot.pause()
        assert not decode.has_class("-down") and "(probe)" in str(decode.border_title)
