"""The metric catalogue (`specmon/analysis/catalogue.py`): its names are the ones every surface
served before it (a compatibility contract), docs/metrics.md's table says what it holds, and a
figure reads None, never 0, where its input is missing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specmon.analysis.catalogue import CATALOGUE, SERVER_FIGURES, Figure, Measured, server_figure
from specmon.analysis.catalogue import figure as catalogued
from specmon.analysis.comparison import compare
from specmon.analysis.pooled import Pooled
from specmon.exporter.metrics import GAUGES, STATUS_GAUGES
from specmon.wording import DASH

DOCS = Path(__file__).resolve().parents[2] / "docs"
NAMES_BEFORE = {
    "decode tok/s": ("specmon_probe_decode_tokens_per_second", "decode_tok_s", "decode_tok_s"),
    "accept length": ("specmon_probe_accept_length", None, "accept_length"),
    "cycle": ("specmon_probe_cycle_seconds", None, "cycle_ms"),
    "speedup": ("specmon_speedup_ratio", "speedup", "speedup_ratio"),
    "speedup low": ("specmon_speedup_ratio_low", "speedup_low", "speedup_ratio_low"),
    "speedup high": ("specmon_speedup_ratio_high", "speedup_high", "speedup_ratio_high"),
    "break-even accept length": (
        "specmon_break_even_accept_length",
        "break_even_accept_length",
        "break_even",
    ),
    "margin": (None, "margin", "margin"),
}
"""(gauge, `check --json` key, export column) of each figure, as served before the catalogue."""
MARKDOWN_BEFORE = {"decode tok/s", "accept", "cycle ms", "speedup", "break-even"}
GAUGES_TAKEN_IN = {"TTFT": "specmon_probe_ttft_seconds"}
"""Gauges served outside the catalogue before it took their figure in: the name stays."""


def _names(figure: Figure) -> tuple[str | None, str | None, str | None, str | None]:
    return figure.prometheus, figure.check_key, figure.export_key, figure.markdown


def test_no_public_name_moved() -> None:
    """Every figure catalogued before keeps its name on every surface; a figure added since
    may only add names (a new key, a new column, a new gauge)."""
    by_key = {f.key: f for f in CATALOGUE}
    for key, names in NAMES_BEFORE.items():
        assert _names(by_key[key])[:3] == names, key
    before = {f.markdown for f in CATALOGUE if f.markdown and f.key in NAMES_BEFORE}
    assert before == MARKDOWN_BEFORE
    for key, gauge in GAUGES_TAKEN_IN.items():
        assert by_key[key].prometheus == gauge, key
        assert gauge not in STATUS_GAUGES, "served twice"


def test_names_are_unique_per_surface() -> None:
    for names in zip(*(_names(f) for f in CATALOGUE), strict=True):
        given = [n for n in names if n is not None]
        assert len(given) == len(set(given)), names
    keys = [f.key for f in CATALOGUE]
    assert len(keys) == len(set(keys))


def test_the_exporter_serves_every_catalogued_gauge_in_base_units() -> None:
    gauges = {f.prometheus for f in CATALOGUE if f.prometheus}
    assert gauges <= set(GAUGES)
    assert not gauges & set(STATUS_GAUGES), "a catalogued figure has a second definition"
    for figure in CATALOGUE:
        if figure.prometheus and figure.unit.startswith("ms"):
            assert "_seconds" in figure.prometheus and figure.prometheus_scale == 1e-3


def _catalogue_table() -> list[list[str]]:
    text = (DOCS / "metrics.md").read_text(encoding="utf-8")
    section = text.split("## The catalogue", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip().strip("`") for cell in row.strip("|").split("|")] for row in rows[1:]]


def test_docs_metrics_lists_the_catalogue_as_it_is() -> None:
    """docs/metrics.md's catalogue table: every figure with its unit and its names, and no
    figure the catalogue does not hold."""
    documented = {row[0]: row for row in _catalogue_table()}
    assert set(documented) == {f.key for f in CATALOGUE}
    for figure in CATALOGUE:
        _, unit, *names = documented[figure.key]
        assert unit == figure.unit, figure.key
        assert tuple(names) == tuple(n or DASH for n in _names(figure)), figure.key


def test_every_catalogued_name_is_in_the_usage_guide() -> None:
    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    for figure in CATALOGUE:
        for name in _names(figure)[:3]:
            if name is not None:
                assert re.search(rf"[`\"]{re.escape(name)}[`\"]", usage), name


def test_missing_is_none_and_shown_as_a_dash() -> None:
    for figure in CATALOGUE:
        assert figure.get(Measured()) is None
        assert figure.written(Measured()) is None
        assert figure.shown(Measured()) == DASH


@pytest.mark.parametrize("figure", CATALOGUE, ids=lambda f: f.key)
def test_each_figure_reads_what_its_definition_gives(figure: Figure) -> None:
    now = Pooled(
        runs=3, decode_tok_s=76.1, rel_se=0.01, accept_length=2.1, cycle_ms=27.6, ttft_ms=41.5
    )
    base = Pooled(runs=5, decode_tok_s=62.9, rel_se=0.01, accept_length=None, cycle_ms=None)
    measured = Measured(pooled=now, comparison=compare(now, base))
    value = figure.get(measured)
    assert value is not None
    assert figure.shown(measured) != DASH


def test_a_figure_is_found_by_its_key() -> None:
    assert [catalogued(f.key) for f in CATALOGUE] == list(CATALOGUE)
    with pytest.raises(KeyError):
        catalogued("decode")


def test_a_value_is_written_to_its_figures_digits_and_the_margin_with_its_sign() -> None:
    """`format` is what `written` writes of a value (the text renderers write the runs' range
    with it); the margin says its sign, as the speedup does, a loss beside a gain."""
    assert catalogued("decode tok/s").format(75.94) == "75.9"
    assert catalogued("accept length").format(2.1) == "2.10"
    assert catalogued("cycle").format(None) is None
    margin = catalogued("margin")
    assert (margin.format(0.361), margin.format(-0.04)) == ("+0.36", "-0.04")
    now = Pooled(
        runs=3, decode_tok_s=76.1, rel_se=0.01, accept_length=2.1, cycle_ms=27.6, ttft_ms=41.5
    )
    base = Pooled(runs=5, decode_tok_s=62.9, rel_se=0.01, accept_length=None, cycle_ms=None)
    measured = Measured(pooled=now, comparison=compare(now, base))
    assert margin.written(measured) == "+0.36"  # 2.10 − 27.6 · 62.9 / 1000 = 2.10 − 1.74
    assert margin.shown(measured) == "+0.36 tokens/step"
    assert catalogued("cycle").shown(measured) == "27.6 ms"


def test_a_value_for_a_panel_or_a_table_is_its_format_with_its_unit_or_a_dash() -> None:
    """`value_text`: what the panels, the tables, `ab` and the what-if write of a value (the
    latest probe's, a prediction's): `format` and its unit, without it in a column that names
    it, "—" when missing; a ratio as a signed percent, as `shown` writes the speedup's ends.
    `shown` of a plain figure is its `value_text`."""
    decode, cycle = catalogued("decode tok/s"), catalogued("cycle")
    assert decode.value_text(75.94) == "75.9 tok/s"
    assert decode.value_text(75.94, unit=False) == "75.9"
    assert cycle.value_text(None) == cycle.value_text(None, unit=False) == DASH
    assert catalogued("margin").value_text(-0.04, unit=False) == "-0.04"
    assert catalogued("speedup low").value_text(0.2049) == "+20.5%"
    now = Pooled(
        runs=3, decode_tok_s=76.1, rel_se=0.01, accept_length=2.1, cycle_ms=27.6, ttft_ms=41.5
    )
    base = Pooled(runs=5, decode_tok_s=62.9, rel_se=0.01, accept_length=None, cycle_ms=None)
    measured = Measured(pooled=now, comparison=compare(now, base))
    for figure in CATALOGUE:
        if figure.text is None:
            assert figure.shown(measured) == figure.value_text(figure.get(measured)), figure.key


def test_ttft_is_written_to_whole_ms_and_served_in_seconds() -> None:
    """TTFT: the runs' mean (`Pooled.ttft_ms`), written to whole milliseconds on every surface
    (bench's per-run table wrote 0.1 ms before), served in seconds."""
    ttft = catalogued("TTFT")
    now = Pooled(runs=2, decode_tok_s=76.1, rel_se=None, accept_length=None, cycle_ms=None,
                 ttft_ms=41.5)  # fmt: skip
    assert ttft.get(Measured(now)) == 41.5
    assert (ttft.format(41.5), ttft.value_text(44.49), ttft.value_text(None)) == (
        "42",
        "44 ms",
        DASH,
    )
    assert ttft.shown(Measured(now)) == "42 ms"
    assert (ttft.prometheus, ttft.prometheus_scale) == ("specmon_probe_ttft_seconds", 1e-3)


def test_a_server_figure_has_its_unit_and_digits_here_and_no_name_on_the_surfaces() -> None:
    """The server's own `/metrics` figures (the Server panel's ITL) are no set of runs: no
    `Measured` reads them, so they are not in `CATALOGUE`, but their digits are set here."""
    itl = server_figure("ITL")
    assert (itl.unit, itl.format(8.04), itl.value_text(8.04), itl.value_text(None)) == (
        "ms",
        "8.0",
        "8.0 ms",
        DASH,
    )
    assert not {f.key for f in SERVER_FIGURES} & {f.key for f in CATALOGUE}
    with pytest.raises(KeyError):
        server_figure("TTFT")  # the server's TTFT is written to the probe's TTFT's digits
