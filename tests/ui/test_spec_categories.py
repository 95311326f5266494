"""The Speculation panel with a rotating probe: accept length and decode tok/s per category, and
the probe-versus-traffic gap when it is named; still drawn at every named size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from conftest import NOW
from replay import replay_probe
from test_dashboard import healthy
from test_sizes import NAMED, resize_through

from specmon.analysis.comparison import compare
from specmon.analysis.figures import run_figures
from specmon.analysis.pooled import Pooled
from specmon.analysis.representative import TrafficGap
from specmon.session.view import CategoryView
from specmon.session.watch import ProbeOutcome
from specmon.ui.app import SpecmonApp
from specmon.ui.widgets.spec_panel import SpecPanel, category_lines

CATEGORIES = ("code", "chat", "summarisation")


async def _rotating(app: SpecmonApp) -> None:
    """Three probes more, one of each category (the real captures' figures)."""
    for i, category in enumerate(CATEGORIES):
        result = await replay_probe(f"spec/generate_stream_{i}.json")
        outcome = ProbeOutcome(NOW - 1 + i / 10, 5.0 + i, run_figures(result), result, category)
        app.session.probe_done(outcome)


def _body(app: SpecmonApp) -> str:
    return str(app.query_one(SpecPanel).query_one("#spec-body").render())


async def test_each_category_gets_a_column_and_the_gap_a_line(
    make_app: Callable[..., SpecmonApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await healthy()(pilot)
        assert "by cat." not in _body(app)  # one category (the default): no table
        await _rotating(app)
        await pilot.pause()
        view = app._last_view
        assert view is not None
        names = [c.category for c in view.spec.categories]
        assert names == ["general", *CATEGORIES]
        text = _body(app)
        assert "by cat." in text and "summ…" in text  # cut to its column with "…"
        first = view.spec.categories[1]
        assert first.accept_length is not None
        assert f"{first.accept_length:.2f}" in text.splitlines()[-3]
        assert "probe ≠ traffic" not in text
        said = [e.text for e in view.events if "benched with one prompt" in e.text]
        assert len(said) == 1  # once: the baseline has no runs per category
        assert "the speedup is of the probe's categories pooled" in said[0]
        panel = app.query_one(SpecPanel)
        panel.view = replace(view.spec, traffic_gap=TrafficGap(3.7, 2.1, "counters", 0.01))
        await pilot.pause()
        assert "probe ≠ traffic +76%: not representative" in _body(app)
        await resize_through(pilot, NAMED)  # 60x15 included: drawn, nothing raised


def test_a_category_table_is_four_lines_of_equal_columns() -> None:
    versus_own_baseline = compare(
        Pooled(3, 90.0, 0.01, 2.6, 28.9), Pooled(3, 60.0, 0.01, None, None)
    )
    lines = category_lines(
        (
            CategoryView("code", 2.6, 90.0, 2, versus_own_baseline),
            CategoryView("chat", None, None, 0, None, "no baseline in the store"),
        )
    )
    assert len(lines) == 4
    assert lines[1].split() == ["accept", "2.60", "—"]
    assert lines[3].split() == ["speedup", "+50%", "—"]
    assert len({len(line) for line in lines[1:]}) == 1  # equal columns
    assert category_lines(()) == []
