"""Comparison rows, their Markdown/CSV/JSON export, and the `snapshots compare` report."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from snapshots import (
    ARGS,
    MAX_AGE,
    PROTOCOL,
    SAME,
    STALE_BASELINE_TOK_S,
    T0,
    baseline,
    snapshot,
    speculative,
)

from specmon.analysis.comparison import Verdict
from specmon.analysis.validity import LifetimeCheck, LifetimeState, Validity
from specmon.cli import main
from specmon.model import Snapshot
from specmon.probe_prompts import BUILTIN_SET, DEFAULT_PROMPT, ProbePrompt
from specmon.reports.compare_report import compare_text
from specmon.reports.snapshot_table import ComparisonRow, comparison_rows, export
from specmon.storage.serialize import snapshot_from_record
from specmon.storage.store import Store
from specmon.wording import pct


def _text(base: Snapshot, spec: Snapshot) -> list[str]:
    return compare_text(base, spec, max_age_s=MAX_AGE, lifetime=SAME).splitlines()


def test_compare_text_says_winning_and_its_numbers_agree() -> None:
    lines = _text(baseline(1), speculative(2))
    assert lines == [
        "base  #1  no speculation  http://10.1.230.174:8000  2025-06-15T15:06:40Z"
        "  decode 62.9 tok/s [62.8–63.0] over 5 runs (15.9 ms/token)",
        "spec  #2  EAGLE3 steps=2 topk=1 draft=3  http://10.1.230.174:8000"
        '  2025-06-15T15:16:40Z  "eagle tuned"  decode 75.9 tok/s [75.7–76.1] over 5 runs'
        " (13.2 ms/token)",
        "baseline valid ✓ (taken 10 min before the run)",
        "speedup         +20.7% [+17.2%, +24.3%] (95% interval): winning",
        "accept length   2.10 (client, pooled); server says 2.08",
        "cycle           27.6 ms per draft+verify (pooled)",
        "break-even      accept length 1.74; measured 2.10, margin +0.36",
    ]
    # The reader's arithmetic: 75.9 / 62.9 − 1 = +20.7%; 2.10 / 1.74 − 1 = +20.7% (rounding).
    assert pytest.approx(0.207, abs=0.0015) == 75.9 / 62.9 - 1
    assert pytest.approx(0.207, abs=0.01) == 2.10 / 1.74 - 1


def test_compare_text_against_the_wrong_baseline_says_losing() -> None:
    lines = _text(baseline(1, tok_s=STALE_BASELINE_TOK_S), speculative(2))
    assert "break-even      accept length 2.49; measured 2.10, margin -0.39" in lines
    assert any(
        line.startswith("speedup         -15.8% [") and line.endswith(": LOSING") for line in lines
    )


def test_compare_text_is_loud_about_a_stale_baseline() -> None:
    other_flags = baseline(1, args={**ARGS, "mem_fraction_static": 0.7})
    lines = _text(other_flags, speculative(2, at=T0 + 3600))
    assert "STALE BASELINE: flags differ: mem_fraction_static" in lines
    assert "STALE BASELINE: too old: taken 60 min before the run (> 30 min)" in lines
    assert not any(line.startswith("baseline valid") for line in lines)
    assert (
        "speedup         +20.7% [+17.2%, +24.3%] (95% interval): does not hold, stale baseline"
        in lines
    )


def test_compare_text_names_a_restart_and_an_unverified_lifetime() -> None:
    base, spec = baseline(1), speculative(2)
    restarted = LifetimeCheck(LifetimeState.RESTARTED, "the baseline server restarted since")
    text = compare_text(base, spec, max_age_s=MAX_AGE, lifetime=restarted)
    assert "STALE BASELINE: the baseline server restarted since" in text.splitlines()
    unknown = LifetimeCheck(LifetimeState.UNVERIFIED, "the baseline server cannot be read")
    lines = compare_text(base, spec, max_age_s=MAX_AGE, lifetime=unknown)
    assert "UNVERIFIED: the baseline server cannot be read" in lines.splitlines()
    assert "baseline valid ✓" not in lines


def test_compare_text_when_base_is_not_a_baseline() -> None:
    lines = _text(speculative(2), baseline(1))
    assert lines[2] == (
        "NOT A BASELINE: #2 ran with speculation on (EAGLE3 steps=2 topk=1 draft=3);"
        " take one with speculation off"
    )
    assert "STALE BASELINE: the baseline ran with speculation on" in lines
    assert "accept length   —" in lines
    assert "break-even      — (BASE is not plain decoding)" in lines


def test_rows_match_baselines_across_servers() -> None:
    other = "http://10.1.230.175:8000"
    plain_elsewhere = snapshot(4, T0 + 300, None, baseline(0).runs, None, url=other)
    snapshots = [
        speculative(3, at=T0 + 600),
        plain_elsewhere,  # another server: the latest baseline before the run
        baseline(1, at=T0, tok_s=STALE_BASELINE_TOK_S),
        baseline(5, at=T0 + 500, args={**ARGS, "mem_fraction_static": 0.7}),
        baseline(6, at=T0 + 900, tok_s=STALE_BASELINE_TOK_S),  # after it: another launch
    ]
    rows = comparison_rows(snapshots, max_age_s=MAX_AGE, lifetimes={4: SAME})
    assert [row.id for row in rows] == [3, 4, 1, 5, 6]
    spec_row = rows[0]
    assert (spec_row.baseline_id, spec_row.baseline_url) == (4, other)
    assert spec_row.comparison is not None and spec_row.validity is not None
    assert spec_row.validity.confirmed
    assert spec_row.comparison.verdict == Verdict.WINNING
    assert spec_row.comparison.break_even == pytest.approx(1.736, abs=1e-3)
    assert spec_row.pooled.decode_tok_s == pytest.approx(75.9, abs=0.01)
    assert (spec_row.decode_tok_s_min, spec_row.decode_tok_s_max) == (75.7, 76.1)
    for row in rows[1:]:
        assert row.config == "no speculation"
        assert (row.pooled.accept_length, row.baseline_id, row.comparison) == (None, None, None)


def test_a_baseline_of_another_server_is_unverified_unless_checked() -> None:
    plain_elsewhere = snapshot(4, T0, None, baseline(0).runs, None, url="http://other:1")
    rows = comparison_rows([speculative(3), plain_elsewhere], max_age_s=MAX_AGE)
    validity = rows[0].validity
    assert validity is not None and validity.valid and not validity.confirmed


def test_a_restart_after_the_run_leaves_a_stored_pair_unverified_not_stale() -> None:
    # Read a day later, the baseline server of another address has restarted since: a restart
    # whose new process started after the run does not make that run's baseline stale (the pair
    # is judged at the run's time), though a restart in between cannot be ruled out.
    plain_elsewhere = snapshot(4, T0, None, baseline(0).runs, None, url="http://other:1")
    spec = speculative(3, at=T0 + 600)

    def validity_with_restart_at(started: float) -> Validity:
        restarted = LifetimeCheck(
            LifetimeState.RESTARTED, "the baseline server restarted since", started
        )
        rows = comparison_rows([spec, plain_elsewhere], max_age_s=MAX_AGE, lifetimes={4: restarted})
        assert rows[0].validity is not None
        return rows[0].validity

    after = validity_with_restart_at(T0 + 86_400)
    assert after.valid and not after.confirmed
    assert after.unverified[0].startswith("the baseline server restarted after the run (23.8 h")
    between = validity_with_restart_at(T0 + 300)
    assert between.reasons == ("the baseline server restarted since",)


def test_speculative_row_without_a_baseline() -> None:
    (row,) = comparison_rows([speculative(2)], max_age_s=MAX_AGE)
    assert (row.baseline_id, row.comparison, row.validity) == (None, None, None)
    assert row.baseline_note == "no baseline in the store"


def _rows(spec_at: float = T0 + 600) -> list[ComparisonRow]:
    return comparison_rows(
        [speculative(2, at=spec_at, label="tuned | v2"), baseline(1)], max_age_s=MAX_AGE
    )


URL = "http://10.1.230.174:8000"


def test_markdown_export() -> None:
    assert export(_rows(), "md") == (
        "| id | url | created | label | category | config | decode tok/s | min | max | accept"
        " | cycle ms | baseline | baseline tok/s | speedup | verdict | break-even"
        " | baseline valid | ms/token | TTFT ms |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        f"| 2 | {URL} | 2025-06-15T15:16:40Z | tuned \\| v2 | — | EAGLE3 steps=2 topk=1 draft=3"
        " | 75.9 | 75.7 | 76.1 | 2.10 | 27.6 | 1 | 62.9 | +20.7% [+17.2%, +24.3%] | winning | 1.74"
        " | ✓ | 13.2 | 45 |\n"
        f"| 1 | {URL} | 2025-06-15T15:06:40Z | — | — | no speculation | 62.9 | 62.8 | 63.0 | —"
        " | — | — | — | — | — | — | — | 15.9 | 45 |\n"
    )


def test_markdown_export_shows_stale_reasons() -> None:
    table = export(_rows(spec_at=T0 + 7200), "md")
    assert "| 1.74 | ✗ too old: taken 2.0 h before the run (> 30 min) |" in table


def test_csv_export_is_numbers_and_booleans() -> None:
    text = export(_rows(), "csv")
    spec, base = list(csv.DictReader(io.StringIO(text)))
    (row,) = json.loads(export(_rows(), "json"))["rows"][:1]
    # The same names and values as the JSON, as text: a script reads either alike.
    assert list(spec) == list(row)
    assert spec["speedup_ratio"] == str(row["speedup_ratio"])
    assert float(spec["speedup_ratio"]) == pytest.approx(0.207, abs=5e-4)
    assert float(spec["speedup_ratio_low"]) < float(spec["speedup_ratio"])
    assert float(spec["speedup_ratio"]) < float(spec["speedup_ratio_high"])
    assert (spec["interval_level"], spec["verdict"]) == ("0.95", "winning")
    assert (spec["baseline_valid"], spec["baseline_confirmed"]) == ("true", "true")
    assert spec["baseline_reasons"] == spec["baseline_unverified"] == spec["no_baseline"] == ""
    assert spec["baseline_conditions"] == ""  # both ran alone
    assert (spec["created"], spec["label"], spec["baseline_id"]) == (
        "2025-06-15T15:16:40Z",
        "tuned | v2",
        "1",
    )
    assert float(spec["decode_tok_s"]) == pytest.approx(75.9, abs=0.01)
    assert base["speedup_ratio"] == base["accept_length"] == base["baseline_valid"] == ""
    assert text.count("\n") == 3
    assert "\r" not in text
    stale = next(csv.DictReader(io.StringIO(export(_rows(spec_at=T0 + 7200), "csv"))))
    assert stale["baseline_valid"] == "false"
    assert stale["baseline_reasons"] == "too old: taken 2.0 h before the run (> 30 min)"


def test_csv_text_a_spreadsheet_would_run_opens_as_text() -> None:
    """A label (or any text a server supplied) starting with =, +, -, @ opens in a spreadsheet
    as that text, not as a formula; numbers, negative ones too, stay numbers."""
    rows = comparison_rows(
        [speculative(2, at=T0 + 600, label='=HYPERLINK("http://x","y")'), baseline(1)],
        max_age_s=MAX_AGE,
    )
    (spec, _) = list(csv.DictReader(io.StringIO(export(rows, "csv"))))
    assert spec["label"] == '\'=HYPERLINK("http://x","y")'
    assert float(spec["speedup_ratio"]) == pytest.approx(0.207, abs=5e-4)
    assert json.loads(export(rows, "json"))["rows"][0]["label"] == '=HYPERLINK("http://x","y")'


def test_json_export() -> None:
    document = json.loads(export(_rows(spec_at=T0 + 7200), "json"))
    assert document["schema"] == 6
    spec, base = document["rows"]
    assert (spec["id"], spec["url"], spec["created_at"]) == (2, URL, T0 + 7200)
    assert spec["speculative"] is True
    assert spec["decode_tok_s"] == pytest.approx(75.9, abs=0.01)
    assert spec["baseline_id"] == 1
    now, then = spec["decode_tok_s"], spec["baseline_decode_tok_s"]
    assert spec["speedup_ratio"] == pytest.approx(now / then - 1)
    assert spec["speedup_ratio_low"] < spec["speedup_ratio"] < spec["speedup_ratio_high"]
    assert spec["verdict"] == "winning"
    assert spec["break_even"] + spec["margin"] == pytest.approx(spec["accept_length"])
    assert spec["baseline_valid"] is False
    assert spec["baseline_reasons"] == ["too old: taken 2.0 h before the run (> 30 min)"]
    assert base["speedup_ratio"] is None and base["baseline_valid"] is None
    assert base["accept_length"] is None and base["cycle_ms"] is None


def test_export_of_no_rows() -> None:
    assert json.loads(export([], "json")) == {"schema": 6, "rows": []}
    assert export([], "csv").count("\n") == 1
    assert export([], "md").count("\n") == 2


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown export format 'xlsx'"):
        export(_rows(), "xlsx")  # type: ignore[arg-type]


def test_each_round_is_paired_with_its_own_baseline() -> None:
    # `ab --rounds 2`: baseline, speculative, baseline, speculative; round 2's baseline (a later
    # launch, and slower here) must not stand for round 1's.
    rounds = [
        baseline(1, at=T0),
        speculative(2, at=T0 + 300),
        baseline(3, at=T0 + 600, tok_s=(55.0, 55.1, 55.2, 55.1, 55.05)),
        speculative(4, at=T0 + 900),
    ]
    rows = comparison_rows(rounds, max_age_s=MAX_AGE)
    assert [(row.id, row.baseline_id) for row in rows] == [(1, None), (2, 1), (3, None), (4, 3)]
    first, second = rows[1].comparison, rows[3].comparison
    assert first is not None and first.speedup.value == pytest.approx(75.9 / 62.9 - 1, abs=1e-3)
    assert second is not None and second.speedup.value == pytest.approx(75.9 / 55.1 - 1, abs=1e-3)
    assert all(row.validity is not None and row.validity.valid for row in rows[1::2])


def test_only_a_baseline_of_the_runs_protocol_is_its_baseline() -> None:
    other_protocol = replace(baseline(5, at=T0 + 500), protocol=replace(PROTOCOL, max_tokens=64))
    rows = comparison_rows([speculative(2), baseline(1), other_protocol], max_age_s=MAX_AGE)
    assert rows[0].baseline_id == 1
    # Only one with another protocol before it: no baseline, and the nearest is named with the
    # difference that disqualifies it (the one rule: `analysis.baseline_rule`).
    (row,) = comparison_rows([speculative(2)], candidates=[other_protocol], max_age_s=MAX_AGE)
    assert (row.baseline_id, row.validity) == (None, None)
    assert row.baseline_note == (
        "no baseline applies: #5 (http://10.1.230.174:8000) was taken with max_tokens 64, "
        "the run uses 500"
    )


def test_the_age_of_a_stored_pair_is_the_gap_between_its_snapshots() -> None:
    # Both taken long ago (T0 is in 2025): fresh for each other, 10 min apart.
    (row,) = comparison_rows([speculative(2)], candidates=[baseline(1)], max_age_s=MAX_AGE)
    assert row.validity is not None and row.validity.valid
    # Too far apart for each other: too old, by the gap.
    (old,) = comparison_rows(
        [speculative(2, at=T0 + 2 * 3600)], candidates=[baseline(1)], max_age_s=MAX_AGE
    )
    assert old.baseline_note == "✗ too old: taken 2.0 h before the run (> 30 min)"


def test_a_baseline_taken_after_the_run_does_not_apply_to_it() -> None:
    lines = _text(baseline(1, at=T0 + 900), speculative(2, at=T0 + 600))
    assert (
        "STALE BASELINE: taken 5 min after the run: a baseline applies to the runs after it"
        in lines
    )


def test_a_stored_comparison_read_long_after_still_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Taken in June 2025 and read now: the pair was 10 min apart, so it holds; the days since
    # do not make it "too old".
    db = str(tmp_path / "s.db")
    with Store(db) as store:
        store.save_all([replace(baseline(1), id=None), replace(speculative(2), id=None)])
    assert main(["snapshots", "compare", "1", "2", "--offline", "--db", db]) == 0
    assert "baseline valid ✓ (taken 10 min before the run)" in capsys.readouterr().out
    assert main(["snapshots", "export", "--format", "json", "--offline", "--db", db]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    spec = next(row for row in rows if row["speculative"])
    assert (spec["baseline_id"], spec["baseline_valid"], spec["baseline_reasons"]) == (1, True, [])


def _in_category(snapshot: Snapshot, prompt: ProbePrompt) -> Snapshot:
    """The snapshot as `bench --probe-prompts` takes it for `prompt`'s category."""
    return replace(snapshot, protocol=replace(PROTOCOL, prompt=prompt.prompt))


CODE, CHAT = BUILTIN_SET[0], BUILTIN_SET[1]


def test_each_row_names_the_category_of_its_prompt_and_pairs_within_it() -> None:
    # `bench --probe-prompts builtin` on the plain server, then on the speculative one: each
    # category's run is paired with that category's baseline, not the latest (chat's, slower).
    mine = ProbePrompt("support", "My order never arrived: what can I do?")
    snapshots = [
        _in_category(baseline(1, at=T0), CODE),
        _in_category(baseline(2, at=T0 + 60, tok_s=(50.0, 50.1, 50.2, 50.1, 50.05)), CHAT),
        _in_category(speculative(3, at=T0 + 600), CODE),
        _in_category(speculative(4, at=T0 + 660), CHAT),
        replace(baseline(5, at=T0 + 700), protocol=replace(PROTOCOL, prompt=DEFAULT_PROMPT)),
        _in_category(baseline(6, at=T0 + 800), mine),
        baseline(7, at=T0 + 900),  # a prompt of one's own: no category
    ]
    rows = comparison_rows(snapshots, max_age_s=MAX_AGE, prompts=[mine])
    assert [(row.id, row.category, row.baseline_id) for row in rows] == [
        (1, "code", None),
        (2, "chat", None),
        (3, "code", 1),
        (4, "chat", 2),
        (5, "general", None),
        (6, "support", None),
        (7, None, None),
    ]
    assert all(row.validity is not None and row.validity.valid for row in rows[2:4])
    # Without the user's file its prompts are unknown: no category.
    assert comparison_rows(snapshots[5:6], max_age_s=MAX_AGE)[0].category is None
    records = list(csv.DictReader(io.StringIO(export(rows, "csv"))))
    assert [r["category"] for r in records] == [
        "code",
        "chat",
        "code",
        "chat",
        "general",
        "support",
        "",
    ]
    document = json.loads(export(rows, "json"))
    assert [r["category"] for r in document["rows"]][-2:] == ["support", None]
    assert "| code | EAGLE3 steps=2 topk=1 draft=3 |" in export(rows, "md")


def test_snapshots_export_names_categories_of_a_prompt_file(tmp_path: Path) -> None:
    mine = ProbePrompt("support", "My order never arrived: what can I do?")
    (tmp_path / "prompts.jsonl").write_text(
        json.dumps({"category": mine.category, "prompt": mine.prompt}) + "\n"
    )
    db = str(tmp_path / "s.db")
    with Store(db) as store:
        store.save_all(
            [
                replace(_in_category(baseline(1), mine), id=None),
                replace(_in_category(speculative(2), CODE), id=None),
            ]
        )
    out = tmp_path / "exp.json"
    export_ = ["snapshots", "export", "--offline", "--db", db, "-o", str(out)]
    assert main([*export_, "--probe-prompts", str(tmp_path / "prompts.jsonl")]) == 0
    assert [r["category"] for r in json.loads(out.read_text())["rows"]] == ["support", "code"]
    assert main(export_) == 0
    assert [r["category"] for r in json.loads(out.read_text())["rows"]] == [None, "code"]
    assert main([*export_, "--probe-prompts", str(tmp_path / "none.jsonl")]) == 2


def test_the_output_suffix_says_the_format_and_a_mismatch_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.db")
    with Store(db) as store:
        store.save_all([replace(baseline(1), id=None), replace(speculative(2), id=None)])
    export_ = ["snapshots", "export", "--offline", "--db", db]
    assert main([*export_, "-o", str(tmp_path / "exp.csv")]) == 0
    records = list(csv.DictReader(io.StringIO((tmp_path / "exp.csv").read_text())))
    assert [r["id"] for r in records] == ["1", "2"]
    assert main([*export_, "-o", str(tmp_path / "EXP.JSON")]) == 0
    assert json.loads((tmp_path / "EXP.JSON").read_text())["schema"] == 6
    assert main([*export_, "--format", "csv", "-o", str(tmp_path / "exp.txt")]) == 0
    assert (tmp_path / "exp.txt").read_text().startswith("id,url,created,")
    capsys.readouterr()
    assert main([*export_, "--format", "md", "-o", str(tmp_path / "x.csv")]) == 2
    assert capsys.readouterr().err == (
        f"specmon: error: --format md does not match {tmp_path / 'x.csv'}: its suffix says csv\n"
    )
    assert main([*export_, "-o", str(tmp_path / "x.txt")]) == 2
    assert "cannot tell the format of" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.txt").exists()


def test_the_real_h200_ab_store_pairs_each_round_with_its_own_baseline() -> None:
    # Two ABAB rounds on an H200 (SGLang 0.5.17, NGRAM), saved in the order they ran. Round 1
    # measured +65.7% at 4 streams; paired with round 2's baseline (a later launch: 203 tok/s,
    # not 339) it read +176.1%.
    fixture = Path(__file__).parents[1] / "fixtures" / "sglang-0.5.17" / "ab_two_rounds.json"
    records = json.loads(fixture.read_text())
    stored = [replace(snapshot_from_record(r), id=i) for i, r in enumerate(records, 1)]
    rows = {row.id: row for row in comparison_rows(stored, max_age_s=MAX_AGE)}
    pairs = {i: rows[i].baseline_id for i in rows if rows[i].speculative}
    assert pairs == {4: 1, 5: 2, 6: 3, 10: 7, 11: 8, 12: 9}
    four_streams = [rows[i].comparison for i in (5, 11)]
    assert [pct(c.speedup.value, signed=True) for c in four_streams if c] == ["+65.7%", "+159.4%"]
    assert all(rows[i].validity is not None and rows[i].validity.confirmed for i in pairs)


def test_snapshots_export_and_list_go_oldest_first_with_a_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38: `export` ordered by server (rows 2, 3, 1) and `list` had no header."""
    db = str(tmp_path / "s.db")
    other = replace(baseline(2, at=T0 + 60), url="http://gpu-box-2.cluster:8000")
    with Store(db) as store:
        store.save_all(
            [replace(s, id=None) for s in (baseline(1), other, speculative(3, at=T0 + 600))]
        )
    assert main(["snapshots", "export", "--format", "json", "--offline", "--db", db]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [row["id"] for row in rows] == [1, 2, 3]
    assert main(["snapshots", "list", "--db", db]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split() == ["id", "taken", "server", "speculation", "decode", "runs"]
    assert len(lines) == 3 and len({line.index(" baseline") for line in lines[1:]}) == 1
