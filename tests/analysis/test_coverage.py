"""The coverage simulation (benchmarks/coverage.py) in small: a fixed seed and 300 cases a
setting, so the bands are tolerant (±4 points around 95%: a binomial's 2.5 standard errors)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.slow  # the coverage simulation: ~2.4 s a test

PATH = Path(__file__).parent.parent.parent / "benchmarks" / "coverage.py"


def _coverage() -> ModuleType:
    spec = importlib.util.spec_from_file_location("coverage_benchmark", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_intervals_cover_the_true_speedup_about_95_percent_of_the_time() -> None:
    rows = _coverage().simulate(cases=300, seed=1, speedup=0.25)
    fixed = [r for r in rows if r.what in ("check, 95% interval", "ab, 95% interval")]
    assert any("1 probe," in r.setting for r in fixed)  # one probe against the baseline
    assert any(r.setting.startswith("2 rounds") for r in fixed)
    for row in fixed:
        assert 0.91 <= row.coverage <= 0.99, row


def test_the_what_if_interval_holds_the_truth_anywhere_in_the_models_range() -> None:
    rows = [
        r
        for r in _coverage().simulate(cases=300, seed=1, speedup=0.25)
        if r.what.startswith("what-if")
    ]
    assert len(rows) == 2
    for row in rows:
        assert row.coverage >= 0.95, row  # a range widened by the runs' interval: conservative


def test_the_sequential_rule_keeps_its_error_rate_and_finds_a_real_speedup() -> None:
    rows = [
        r for r in _coverage().simulate(cases=300, seed=1, speedup=0.25) if "sequential" in r.what
    ]
    null = [r for r in rows if r.setting.startswith("true +0%")]
    assert len(null) == 2
    for row in null:
        assert row.called is not None and row.called <= 0.08, row  # stated: at most 5%
        assert row.coverage >= 0.93, row
    (real,) = [r for r in rows if r.setting.startswith("true +25%")]
    assert real.winning is not None and real.winning >= 0.95
    assert real.median_probes == 3
