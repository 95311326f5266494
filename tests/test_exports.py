"""Comparison rows, their Markdown/CSV/JSON export, and the `snapshots compare` report."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

import pytest

from specmon.analysis.stats import Speedup
from specmon.exports import (
    ComparisonRow,
    compare_text,
    comparison_rows,
    export,
    format_speedup,
    snapshot_break_even,
    snapshot_speedup,
)
from specmon.model import Protocol, RunFigures, ServerInfo, Snapshot, SpecConfig

T0 = 1_750_000_000.0  # 2025-06-15T15:06:40Z
MAX_AGE = 30 * 60.0
ARGS = {"model_path": "org/Big-MoE", "tp_size": 8, "mem_fraction_static": 0.8, "port": 30000}
SPEC_ARGS = {
    **ARGS,
    "speculative_algorithm": "EAGLE3",
    "speculative_num_steps": 2,
    "speculative_eagle_topk": 1,
    "speculative_num_draft_tokens": 3,
}
PROTOCOL = Protocol(runs=5, warmup=1, max_tokens=500, temperature=0.0, prompt="Explain a CPU.")
# DESIGN.md §1: the true baseline (62.9 tok/s, 15.9 ms/token), the stale one it replaced
# (11.1 ms/token), and EAGLE-3 at 75.9 tok/s with a 29.9 ms cycle and accept length 2.1.
BASELINE_TOK_S = (62.8, 62.9, 63.0, 62.9, 62.85)
STALE_BASELINE_TOK_S = (90.0, 90.1, 90.2, 90.1, 90.05)
SPEC_TOK_S = (75.7, 75.9, 76.1, 75.8, 76.0)
SPEC_ACCEPT = (2.05, 2.1, 2.15, 2.1, 2.08)
SPEC_CYCLE_MS = (29.8, 29.9, 30.0, 29.9, 29.95)


def make_run(tok_s: float, accept: float | None, cycle: float | None) -> RunFigures:
    return RunFigures(
        completion_tokens=500,
        prompt_tokens=21,
        ttft_ms=45.0,
        e2e_s=499 / tok_s + 0.045,
        e2e_tok_s=500 / (499 / tok_s + 0.045),
        decode_tok_s=tok_s,
        accept_length=accept,
        server_accept_length=None if accept is None else accept - 0.02,
        verify_ct=None if accept is None else round(499 / accept),
        cycle_ms=cycle,
        cycle_ms_p50=cycle,
        cycle_ms_p95=None if cycle is None else cycle * 1.2,
    )


def baseline(
    snapshot_id: int,
    *,
    at: float = T0,
    tok_s: Sequence[float] = BASELINE_TOK_S,
    args: dict[str, object] | None = None,
) -> Snapshot:
    return _snapshot(snapshot_id, at, None, tuple(make_run(t, None, None) for t in tok_s), args)


def speculative(
    snapshot_id: int,
    *,
    at: float = T0 + 600,
    accept: Sequence[float] = SPEC_ACCEPT,
    label: str | None = "eagle tuned",
) -> Snapshot:
    runs = tuple(
        make_run(t, a, c) for t, a, c in zip(SPEC_TOK_S, accept, SPEC_CYCLE_MS, strict=True)
    )
    return _snapshot(snapshot_id, at, label, runs, None, SpecConfig("EAGLE3", 2, 1, 3))


def _snapshot(
    snapshot_id: int,
    at: float,
    label: str | None,
    runs: tuple[RunFigures, ...],
    args: dict[str, object] | None,
    spec: SpecConfig | None = None,
) -> Snapshot:
    server = ServerInfo(
        backend="sglang",
        version="0.5.17",
        model="org/Big-MoE",
        tp_size=8,
        dp_size=1,
        pp_size=1,
        speculative=spec,
        stream_interval=1,
        cuda_graph_disabled=False,
        cuda_graph_max_bs=8,
        metrics_enabled=True,
        args=args if args is not None else (SPEC_ARGS if spec else ARGS),
    )
    return Snapshot(
        created_at=at,
        url="http://10.1.230.174:8000",
        label=label,
        server=server,
        protocol=PROTOCOL,
        runs=runs,
        id=snapshot_id,
    )


def test_break_even_of_the_design_example() -> None:
    # 29.9 ms / (1000 / 62.9 tok/s = 15.9 ms/token) = 1.88; against the stale baseline
    # (11.1 ms/token) it read 2.69, which made a winning config look like a loss.
    assert snapshot_break_even(speculative(2), baseline(1)) == pytest.approx(1.8807, abs=1e-4)
    stale = baseline(1, tok_s=STALE_BASELINE_TOK_S)
    assert snapshot_break_even(speculative(2), stale) == pytest.approx(2.694, abs=1e-3)
    assert snapshot_break_even(baseline(3), baseline(1)) is None


def test_compare_text_says_winning() -> None:
    text = compare_text(baseline(1), speculative(2), now=T0 + 660, max_age_s=MAX_AGE)
    assert text.splitlines() == [
        "base  #1  no speculation  2025-06-15T15:06:40Z"
        "  decode 62.9 tok/s [62.8–63.0] over 5 runs (15.9 ms/token)",
        'spec  #2  EAGLE3 steps=2 topk=1 draft=3  2025-06-15T15:16:40Z  "eagle tuned"'
        "  decode 75.9 tok/s [75.7–76.1] over 5 runs (13.2 ms/token)",
        "baseline valid ✓ (taken 11 min ago)",
        "speedup         +20.7% [+20.4%, +21.0%] (95% interval)",
        "accept length   2.10 (client, median); server says 2.08",
        "cycle           29.9 ms per draft+verify (median)",
        "break-even      accept length 1.88; measured 2.10, margin +0.22: winning",
    ]


def test_compare_text_against_the_wrong_baseline_says_losing() -> None:
    stale = baseline(1, tok_s=STALE_BASELINE_TOK_S)
    text = compare_text(stale, speculative(2), now=T0 + 660, max_age_s=MAX_AGE)
    assert "break-even      accept length 2.69; measured 2.10, margin -0.59: losing" in text
    assert "speedup         -15.8% [" in text


def test_compare_text_is_loud_about_a_stale_baseline() -> None:
    other_flags = baseline(1, args={**ARGS, "mem_fraction_static": 0.7})
    text = compare_text(other_flags, speculative(2), now=T0 + 3600, max_age_s=MAX_AGE)
    lines = text.splitlines()
    assert "STALE BASELINE: flags differ: mem_fraction_static" in lines
    assert "STALE BASELINE: too old (60 min > 30 min)" in lines
    assert not any(line.startswith("baseline valid") for line in lines)
    assert (
        "speedup         +20.7% [+20.4%, +21.0%] (95% interval): does not hold, stale baseline"
        in lines
    )


def test_compare_text_when_base_is_not_a_baseline() -> None:
    text = compare_text(speculative(2), baseline(1), now=T0 + 660, max_age_s=MAX_AGE)
    lines = text.splitlines()
    assert lines[2] == (
        "NOT A BASELINE: #2 ran with speculation on (EAGLE3 steps=2 topk=1 draft=3);"
        " take one with speculation off"
    )
    assert "STALE BASELINE: the baseline ran with speculation on" in lines
    assert "accept length   —" in lines
    assert "break-even      — (BASE is not plain decoding)" in lines


def test_rows_pair_each_speculative_snapshot_with_the_newest_matching_baseline() -> None:
    snapshots = [
        speculative(3, at=T0 + 600),
        baseline(4, at=T0 + 900),  # taken after the speculative run: still its baseline
        baseline(1, at=T0, tok_s=STALE_BASELINE_TOK_S),
        baseline(5, at=T0 + 1200, args={**ARGS, "mem_fraction_static": 0.7}),
    ]
    rows = comparison_rows(snapshots, now=T0 + 1000, max_age_s=MAX_AGE)
    assert [row.id for row in rows] == [3, 4, 1, 5]
    spec_row = rows[0]
    assert spec_row.baseline_id == 4
    assert spec_row.speedup == snapshot_speedup(snapshots[0], snapshots[1])
    assert spec_row.break_even == pytest.approx(1.8807, abs=1e-4)
    assert spec_row.validity is not None
    assert spec_row.validity.valid
    assert (spec_row.decode_tok_s, spec_row.decode_tok_s_min, spec_row.decode_tok_s_max) == (
        75.9,
        75.7,
        76.1,
    )
    assert (spec_row.accept_length, spec_row.cycle_ms) == (2.1, 29.9)
    for row in rows[1:]:
        assert row.config == "no speculation"
        assert (row.accept_length, row.cycle_ms, row.baseline_id) == (None, None, None)
        assert (row.speedup, row.break_even, row.validity) == (None, None, None)


def test_speculative_row_without_a_baseline() -> None:
    (row,) = comparison_rows([speculative(2)], now=T0, max_age_s=MAX_AGE)
    assert row.baseline_id is None
    assert row.speedup is None
    assert row.break_even is None
    assert row.validity is None


def _rows(now: float = T0 + 660) -> list[ComparisonRow]:
    return comparison_rows(
        [speculative(2, label="tuned | v2"), baseline(1)], now=now, max_age_s=MAX_AGE
    )


def test_markdown_export() -> None:
    assert export(_rows(), "md") == (
        "| id | created | label | config | decode tok/s | min | max | accept | cycle ms"
        " | baseline | speedup | break-even | baseline valid |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        "| 2 | 2025-06-15T15:16:40Z | tuned \\| v2 | EAGLE3 steps=2 topk=1 draft=3 | 75.9"
        " | 75.7 | 76.1 | 2.10 | 29.9 | 1 | +20.7% [+20.4%, +21.0%] | 1.88 | ✓ |\n"
        "| 1 | 2025-06-15T15:06:40Z | — | no speculation | 62.9 | 62.8 | 63.0 | — | — | — | —"
        " | — | — |\n"
    )


def test_markdown_export_shows_stale_reasons() -> None:
    table = export(_rows(now=T0 + 7200), "md")
    assert "| 1.88 | ✗ too old (120 min > 30 min) |" in table


def test_csv_export() -> None:
    text = export(_rows(), "csv")
    records = list(csv.DictReader(io.StringIO(text)))
    assert records == [
        {
            "id": "2",
            "created": "2025-06-15T15:16:40Z",
            "label": "tuned | v2",
            "config": "EAGLE3 steps=2 topk=1 draft=3",
            "decode_tok_s": "75.9",
            "decode_tok_s_min": "75.7",
            "decode_tok_s_max": "76.1",
            "accept_length": "2.10",
            "cycle_ms": "29.9",
            "baseline_id": "1",
            "speedup": "+20.7% [+20.4%, +21.0%]",
            "break_even": "1.88",
            "baseline_valid": "✓",
        },
        {
            "id": "1",
            "created": "2025-06-15T15:06:40Z",
            "label": "",
            "config": "no speculation",
            "decode_tok_s": "62.9",
            "decode_tok_s_min": "62.8",
            "decode_tok_s_max": "63.0",
            "accept_length": "",
            "cycle_ms": "",
            "baseline_id": "",
            "speedup": "",
            "break_even": "",
            "baseline_valid": "",
        },
    ]
    assert text.count("\n") == 3
    assert "\r" not in text


def test_json_export() -> None:
    spec, base = json.loads(export(_rows(now=T0 + 7200), "json"))
    assert spec["id"] == 2
    assert spec["created_at"] == T0 + 600
    assert spec["label"] == "tuned | v2"
    assert spec["speculative"] is True
    assert spec["decode_tok_s"] == 75.9
    assert spec["accept_length"] == 2.1
    assert spec["cycle_ms"] == 29.9
    assert spec["baseline_id"] == 1
    assert spec["speedup"]["value"] == pytest.approx(75.9 / 62.89 - 1)
    assert spec["speedup"]["low"] < spec["speedup"]["value"] < spec["speedup"]["high"]
    assert spec["break_even"] == pytest.approx(1.8807, abs=1e-4)
    assert spec["baseline_valid"] is False
    assert spec["baseline_reasons"] == ["too old (120 min > 30 min)"]
    assert base == {
        "id": 1,
        "created_at": T0,
        "label": None,
        "config": "no speculation",
        "speculative": False,
        "decode_tok_s": 62.9,
        "decode_tok_s_min": 62.8,
        "decode_tok_s_max": 63.0,
        "accept_length": None,
        "cycle_ms": None,
        "baseline_id": None,
        "speedup": None,
        "break_even": None,
        "baseline_valid": None,
        "baseline_reasons": None,
    }


def test_export_of_no_rows() -> None:
    assert export([], "json") == "[]"
    assert export([], "csv").count("\n") == 1
    assert export([], "md").count("\n") == 2


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown export format 'xlsx'"):
        export(_rows(), "xlsx")  # type: ignore[arg-type]


def test_format_speedup() -> None:
    assert format_speedup(Speedup(0.21, 0.182, 0.239)) == "+21.0% [+18.2%, +23.9%]"
    assert format_speedup(Speedup(-0.15, None, None)) == "-15.0%"
    assert format_speedup(None) is None
