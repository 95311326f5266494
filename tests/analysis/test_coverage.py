"""The coverage simulation (benchmarks/coverage.py) in small: a fixed seed and 600 cases a
setting, simulated once for every test here, so the bands are tolerant (±4 points around 95%:
a binomial's 4.5 standard errors; two rounds' t(1) intervals swing more from one draw of 300
cases to the next: 90.7% at seed 1 where 6,000 cases give 94.8%)."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow  # the coverage simulation: ~9 s, once

PATH = Path(__file__).parent.parent.parent / "benchmarks" / "coverage.py"


def _coverage() -> ModuleType:
    spec = importlib.util.spec_from_file_location("coverage_benchmark", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@functools.cache
def _rows() -> tuple:
    return tuple(_coverage().simulate(cases=600, seed=1, speedup=0.25))


def test_intervals_cover_the_true_speedup_about_95_percent_of_the_time() -> None:
    rows = _rows()
    fixed = [r for r in rows if r.what in ("check, 95% interval", "ab, 95% interval")]
    # A server twice as noisy as the prior is what one probe cannot know: reported, not held.
    fixed = [r for r in fixed if "σ 7.0%" not in r.setting]
    assert any("1 probe σ" in r.setting for r in fixed)  # one probe against the baseline
    assert any(r.setting.startswith("2 rounds") for r in fixed)
    for row in fixed:
        assert 0.91 <= row.coverage <= 0.99, row


def test_one_two_and_three_probes_against_a_steady_baseline_cover_95_percent() -> None:
    # Issue 35: a steady (zero-spread) plain baseline and one probe gave an interval 0.03
    # points wide; each side now has its own spread (plain 0.4%, speculative 3.5%).
    rows = _rows()
    steady = {r.setting: r for r in rows if r.setting.startswith("baseline 5 runs steady, ")}
    assert len(steady) == 3
    for probes in ("1 probe", "2 probes", "3 probes"):
        (row,) = [r for s, r in steady.items() if f", {probes} σ 3.5%" in s]
        assert 0.91 <= row.coverage <= 0.99, row  # 93-97% at 2,000 cases (docs/metrics.md)


def test_the_what_if_interval_holds_the_truth_anywhere_in_the_models_range() -> None:
    rows = [r for r in _rows() if r.what.startswith("what-if")]
    assert len(rows) == 2
    for row in rows:
        assert row.coverage >= 0.95, row  # a range widened by the runs' interval: conservative


def test_the_sequential_rule_keeps_its_error_rate_and_finds_a_real_speedup() -> None:
    rows = [r for r in _rows() if "sequential" in r.what]
    null = [r for r in rows if r.setting.startswith("true +0%")]
    assert len(null) == 3  # one of them `check --budget 10`, its only look after one probe
    for row in null:
        if "probes σ 5.0%" in row.setting:
            # Probes noisier than the prior (3.5%) say: a few probes cannot tell their spread
            # from the prior's, so the error rate exceeds 5% (6.9% at 2,000 cases, documented).
            assert row.called is not None and row.called <= 0.11, row
            continue
        assert row.called is not None and row.called <= 0.08, row  # stated: at most 5%
        assert row.coverage >= 0.93, row
    (real,) = [r for r in rows if r.setting.startswith("true +25%")]
    assert real.winning is not None and real.winning >= 0.95
    assert real.median_probes == 3
