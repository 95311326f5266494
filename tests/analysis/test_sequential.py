"""`check`'s sequential rule: looks at 3, 5 and 10 probes, α split over them, and the budget."""

from __future__ import annotations

import pytest
from runs import run

from specmon.analysis.comparison import Verdict
from specmon.analysis.pooled import pool
from specmon.analysis.sequential import SequentialRule

BASE = pool([run(t) for t in (100.0, 101.0, 99.0, 100.5, 99.5)])
RULE = SequentialRule()


def _noisy(centre: float, n: int) -> list:
    """n runs around `centre`, ±1.5% in a fixed pattern."""
    return [run(centre * (1 + 0.015 * ((i % 3) - 1))) for i in range(n)]


def test_each_look_spends_a_third_of_alpha() -> None:
    assert RULE.level == pytest.approx(1 - 0.05 / 3)
    assert RULE.max_probes == 10


def test_no_look_between_the_looks() -> None:
    for n in (1, 2, 4):
        look = RULE.step(_noisy(130.0, n), BASE, elapsed_s=n * 0.5, budget_s=30)
        assert look.comparison is None and not look.done


def test_a_clear_win_stops_at_the_first_look_at_the_looks_level() -> None:
    look = RULE.step(_noisy(130.0, 3), BASE, elapsed_s=1.5, budget_s=30)
    assert look.done and look.comparison is not None
    assert look.comparison.verdict == Verdict.WINNING
    assert look.comparison.speedup.level == pytest.approx(RULE.level)


def test_noise_probes_on_to_the_cap() -> None:
    for n in (3, 5):
        look = RULE.step(_noisy(100.0, n), BASE, elapsed_s=n * 0.5, budget_s=30)
        assert look.comparison is not None and look.comparison.verdict == Verdict.WITHIN_NOISE
        assert not look.done
    last = RULE.step(_noisy(100.0, 10), BASE, elapsed_s=5.0, budget_s=30)
    assert last.done and last.comparison is not None


def test_the_budget_ends_probing_with_a_last_look() -> None:
    # 12 s a probe: a third would end at 36 s, past the 30 s budget, so the second is the last
    # (a look though 2 is not one of the looks: it takes the place of those not made).
    assert not RULE.step(_noisy(100.0, 1), BASE, elapsed_s=12.0, budget_s=30).done
    last = RULE.step(_noisy(100.0, 2), BASE, elapsed_s=24.0, budget_s=30)
    assert last.done and last.comparison is not None
    assert last.comparison.verdict == Verdict.WITHIN_NOISE
