"""Conditions compared (analysis/conditions.py): what each surface says when the probe or run
ran under another load, or with a starved client, than its baseline."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from factories import a_run

from specmon.analysis.conditions import (
    STARVED_LAG_MS,
    company_change,
    condition_differences,
    conditions_of,
    one_liner,
)
from specmon.analysis.validity import (
    LifetimeCheck,
    LifetimeState,
    ValidityState,
    snapshot_validity,
)
from specmon.model import Protocol, RunConditions, Snapshot
from specmon.reports.bench_text import summary_lines
from specmon.reports.compare_report import compare_holds, compare_text
from specmon.reports.snapshot_table import comparison_rows, export
from specmon.sources.backends.sglang import parse_server_info

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sglang-0.5.17"
SAME = LifetimeCheck(LifetimeState.SAME, "the same server process")

ALONE = RunConditions(others_running=0, queued=0, load_readings=4, read_lag_ms=0.2)
BESIDE_1 = RunConditions(others_running=1, queued=0, load_readings=4, read_lag_ms=0.2)
BESIDE_3 = RunConditions(others_running=3, queued=2, load_readings=4, read_lag_ms=0.2)
STARVED = RunConditions(
    others_running=0,
    queued=0,
    load_readings=4,
    read_lag_ms=6.0,
    read_lag_max_ms=22.0,
    host_cpu_pct=100.0,
    host_steal_pct=0.0,
)
UNKNOWN = RunConditions()  # metrics off, no lag measured
BUSY = replace(ALONE, host_cpu_pct=100.0)  # a busy machine whose reads kept up
QUIET = replace(ALONE, host_cpu_pct=35.0)
LOADED = "the probe ran beside 1 other request; the baseline ran alone"
LATE = (
    "specmon's machine was starved of CPU during the probe (its reads ran 6.0 ms late, median; "
    "CPU 100% busy); not during the baseline"
)


@pytest.mark.parametrize(
    ("base", "probe", "said"),
    [
        ([ALONE] * 3, [ALONE], []),
        ([ALONE] * 3, [BESIDE_1], [LOADED]),
        (
            [BESIDE_1] * 3,
            [ALONE],
            ["the probe ran alone; the baseline ran beside 1 other request"],
        ),
        (
            [ALONE] * 3,
            [ALONE, BESIDE_1, BESIDE_3, ALONE, ALONE],
            [
                "the probe ran beside up to 3 other requests (2 queued) (2 of 5 runs); "
                "the baseline ran alone"
            ],
        ),
        ([BESIDE_1] * 3, [BESIDE_1], []),  # alike: both beside one other
        ([None] * 3, [BESIDE_1], []),  # a baseline from before conditions: unknown, not alone
        ([ALONE] * 3, [UNKNOWN], []),  # metrics off: the probe's load is unknown
        ([ALONE] * 3, [None], []),
        (
            [ALONE] * 3,
            [STARVED],
            [
                "specmon's machine was starved of CPU during the probe (its reads ran 6.0 ms "
                "late, median; CPU 100% busy); not during the baseline"
            ],
        ),
        (
            [STARVED, ALONE, ALONE],
            [ALONE],
            [
                "specmon's machine was starved of CPU during the baseline (1 of 3 runs) (its "
                "reads ran 6.0 ms late, median; CPU 100% busy); not during the probe"
            ],
        ),
        ([STARVED] * 3, [STARVED], []),  # starved alike
        (
            [replace(QUIET, host_cpu_pct=20.0), QUIET, QUIET],
            [BUSY],
            [
                "specmon's machine was busy during the probe (CPU 100%); not during the "
                "baseline (CPU 20–35%)"
            ],
        ),
        (
            [BUSY] * 3,
            [QUIET],
            [
                "specmon's machine was busy during the baseline (CPU 100%); not during the probe "
                "(CPU 35%)"
            ],
        ),
        (
            [QUIET] * 3,
            [BUSY, BUSY, QUIET],
            [
                "specmon's machine was busy during the probe (2 of 3 runs) (CPU 35–100%); not "
                "during the baseline (CPU 35%)"
            ],
        ),
        ([BUSY, QUIET, QUIET], [QUIET], []),  # one busy moment in the bench: not a busy bench
        ([BUSY] * 3, [BUSY], []),  # busy alike
        ([QUIET] * 3, [ALONE], []),  # the probe's CPU unread: unknown
        # starved and busy: the starvation is said, the busy share its evidence
        ([QUIET] * 3, [STARVED], [LATE]),
    ],
)
def test_what_differs_is_said_in_one_sentence_each(
    base: list[RunConditions | None], probe: list[RunConditions | None], said: list[str]
) -> None:
    assert condition_differences(conditions_of(base), conditions_of(probe)) == said


def test_starved_means_a_median_lag_at_the_threshold() -> None:
    at = replace(ALONE, read_lag_ms=STARVED_LAG_MS)
    below = replace(ALONE, read_lag_ms=STARVED_LAG_MS * 0.9)
    assert conditions_of([at]).starved == 1
    assert conditions_of([below]).starved == 0


def test_one_liner_and_the_events_log() -> None:
    assert one_liner(conditions_of([BESIDE_1])) == "beside 1 other request"
    assert one_liner(conditions_of([UNKNOWN])) is None
    assert one_liner(conditions_of([ALONE, BESIDE_1])) == "beside 1 other request (1 of 2 runs)"
    assert one_liner(conditions_of([STARVED])) == (
        "alone; specmon's machine starved of CPU (its reads ran 6.0 ms late, median; CPU 100% busy)"
    )
    assert one_liner(conditions_of([BUSY, QUIET, BUSY])) == (
        "alone; specmon's machine busy (2 of 3 runs) (CPU 35–100%)"
    )
    assert one_liner(conditions_of([QUIET])) == "alone"
    assert company_change(None, 0) is None
    assert company_change(0, 0) is None
    assert company_change(None, None) is None
    said = company_change(0, 1)
    assert said is not None and said.startswith("the probe ran beside 1 other request")
    assert "a second specmon" in said
    assert company_change(1, 1) is None
    assert company_change(1, 0) == "the probe ran alone again: no other request beside it"


def _pair(
    base_runs: list[RunConditions | None], spec_runs: list[RunConditions | None]
) -> tuple[Snapshot, Snapshot]:
    run = a_run(
        completion_tokens=500,
        prompt_tokens=32,
        ttft_ms=45.0,
        e2e_s=7.9,
        e2e_tok_s=63.0,
        decode_tok_s=63.4,
    )
    protocol = Protocol(len(base_runs), 1, 500, 0.0, "p")

    def snapshot(name: str, at: float, runs: list[RunConditions | None]) -> Snapshot:
        info = parse_server_info(json.loads((FIXTURES / name).read_text()))
        figures = tuple(replace(run, conditions=c) for c in runs)
        return Snapshot(at, "http://h:1", None, info, protocol, figures, id=int(at))

    return snapshot("plain/server_info", 1000.0, base_runs), snapshot(
        "spec/server_info", 1060.0, spec_runs
    )


def test_a_stored_pair_under_other_loads_is_not_a_clean_tick_anywhere() -> None:
    base, spec = _pair([ALONE] * 3, [BESIDE_1] * 3)
    validity = snapshot_validity(base, spec, max_age_s=1800, lifetime=SAME)
    said = "the run ran beside 1 other request; the baseline ran alone"
    assert validity.valid and validity.conditions == (said,)
    assert validity.state == ValidityState.UNVERIFIED
    text = compare_text(base, spec, max_age_s=1800, lifetime=SAME)
    assert f"CONDITIONS DIFFER: {said}" in text
    assert "baseline valid ✓" not in text
    assert not compare_holds(base, spec, validity)


def test_the_export_names_what_differed_in_its_own_column() -> None:
    base, spec = _pair([ALONE] * 3, [BESIDE_1] * 3)
    rows = comparison_rows([spec, base], max_age_s=1800, lifetimes={base.id or 0: SAME})
    said = "the run ran beside 1 other request; the baseline ran alone"
    (first, _) = json.loads(export(rows, "json"))["rows"]
    assert first["baseline_conditions"] == [said]
    (first_csv, _) = csv.DictReader(io.StringIO(export(rows, "csv")))
    assert first_csv["baseline_conditions"] == said


def test_a_stored_pair_alike_stays_valid() -> None:
    base, spec = _pair([ALONE] * 3, [ALONE] * 3)
    validity = snapshot_validity(base, spec, max_age_s=1800, lifetime=SAME)
    assert validity.confirmed and validity.state == ValidityState.VALID
    assert compare_holds(base, spec, validity)


def test_the_bench_summary_says_what_its_runs_ran_beside() -> None:
    base, _ = _pair([ALONE, BESIDE_3, ALONE], [ALONE])
    assert summary_lines(base)[-1] == (
        "Conditions: ran beside 3 other requests (2 queued) (1 of 3 runs)"
    )
    unknown, _ = _pair([None, None], [None])
    assert not any(line.startswith("Conditions") for line in summary_lines(unknown))
