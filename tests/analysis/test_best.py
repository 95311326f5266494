"""`ab --sweep`'s best configuration per concurrency: shown to win beats may-not-win, whatever
the point estimates; among equals the higher speedup."""

from __future__ import annotations

from specmon.analysis.comparison import Comparison, Speedup, verdict
from specmon.analysis.load import Level, best_per_concurrency
from specmon.analysis.pooled import Pooled
from specmon.analysis.validity import Validity

BASE = Pooled(runs=9, decode_tok_s=100.0, rel_se=0.01, accept_length=None, cycle_ms=None)


def _level(concurrency: int, value: float, low: float, high: float, *, valid: bool = True) -> Level:
    gain = Speedup(value, low, high)
    spec = Pooled(9, 100 * (1 + value), 0.01, 2.0, 10.0)
    comparison = Comparison(100.0, 100 * (1 + value), gain, verdict(gain), None, None)
    validity = Validity(() if valid else ("too old",))
    return Level(concurrency, BASE, spec, comparison, None, (validity,), None, None)


def test_a_winning_configuration_ranks_above_a_higher_one_within_noise() -> None:
    noisy = ("draft-tokens=8 steps=7", [_level(1, 0.40, -0.05, 0.85)])
    winning = ("draft-tokens=4 steps=3", [_level(1, 0.20, 0.15, 0.25)])
    for order in ([noisy, winning], [winning, noisy]):
        (best,) = best_per_concurrency(order)
        assert best.config == "draft-tokens=4 steps=3"


def test_among_equals_the_higher_speedup_and_never_an_invalid_pair() -> None:
    per_config = [
        ("a", [_level(1, 0.20, 0.15, 0.25), _level(4, -0.10, -0.15, -0.05)]),
        ("b", [_level(1, 0.30, 0.25, 0.35), _level(4, 0.02, -0.03, 0.07)]),
        ("c", [_level(1, 0.90, 0.85, 0.95, valid=False), _level(4, -0.01, -0.06, 0.04)]),
    ]
    best = best_per_concurrency(per_config)
    assert [(b.concurrency, b.config) for b in best] == [(1, "b"), (4, "b")]
