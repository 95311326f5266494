"""Interleaved probing's pairs (analysis/paired.py) and the A B B A order
(specmon/check/interleaving.py)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Awaitable, Callable
from types import SimpleNamespace

import pytest
from runs import run

from specmon.analysis.comparison import Verdict
from specmon.analysis.paired import Pair, paired_comparison, paired_step, why_not_interleaved
from specmon.analysis.sequential import SequentialRule
from specmon.analysis.stats import t_quantile
from specmon.analysis.validity import LifetimeCheck, LifetimeState, relaunched_for_speculation
from specmon.check.interleaving import Interleaving
from specmon.model import Snapshot


def test_the_pairs_interval_is_the_t_interval_of_their_log_ratios() -> None:
    pairs = [Pair(run(n), run(b)) for n, b in ((125, 100), (130, 101), (121, 99), (127, 100))]
    c = paired_comparison(pairs, level=0.95)
    assert c is not None and c.spread is not None and c.spread.rounds == 4
    logs = [math.log(p.now.decode_tok_s / p.base.decode_tok_s) for p in pairs]  # type: ignore[operator]
    half = t_quantile(0.975, 3) * statistics.stdev(logs) / 2
    ratio = c.now_tok_s / c.base_tok_s
    assert c.speedup.low == pytest.approx(ratio * math.exp(-half) - 1)
    assert c.speedup.high == pytest.approx(ratio * math.exp(half) - 1)
    assert c.verdict == Verdict.WINNING


def test_a_drift_shared_by_both_sides_cancels_in_the_pairs() -> None:
    # Both sides 3% slower each pair, no true speedup: the pairs see none.
    pairs = [Pair(run(100 / 1.03**i + (-1) ** i), run(100 / 1.03**i)) for i in range(10)]
    c = paired_comparison(pairs)
    assert c is not None and c.verdict == Verdict.WITHIN_NOISE
    assert abs(c.speedup.value) < 0.01


def test_one_pair_has_the_runs_interval_and_is_tentative() -> None:
    c = paired_comparison([Pair(run(125, 2.0), run(100))])
    assert c is not None and c.speedup.assumed is not None and c.tentative
    assert paired_comparison([]) is None


def test_the_rule_looks_at_pairs_as_at_probes() -> None:
    rule = SequentialRule()
    pairs = [Pair(run(125), run(100))] * 2
    assert paired_step(rule, pairs, 2.0, 30.0).comparison is None  # 2: not a look
    look = paired_step(rule, [*pairs, Pair(run(126), run(100))], 3.0, 30.0)
    assert look.comparison is not None and look.comparison.speedup.level == rule.level


@pytest.mark.parametrize(
    ("check", "said"),
    [
        (LifetimeCheck(LifetimeState.SAME, "the same server process"), None),
        (relaunched_for_speculation(), "no second server to probe"),
        (LifetimeCheck(LifetimeState.RESTARTED, "restarted since"), "not the process"),
        (LifetimeCheck(LifetimeState.UNVERIFIED, "cannot be read"), "could not be confirmed"),
    ],
)
def test_why_not_interleaved(check: LifetimeCheck, said: str | None) -> None:
    why = why_not_interleaved(check)
    assert why is None if said is None else said in str(why)


async def test_the_sides_alternate_a_b_b_a() -> None:
    order: list[str] = []

    def prober(side: str, tok_s: float) -> Callable[[], Awaitable[Snapshot]]:
        async def probe() -> Snapshot:
            order.append(side)
            return SimpleNamespace(runs=(run(tok_s),))  # type: ignore[return-value]

        return probe

    ticks = iter(range(100))
    interleaving = Interleaving(
        probe_now=prober("A", 125.0),
        probe_base=prober("B", 100.0),
        rule=SequentialRule(),
        budget_s=1000.0,
        clock=lambda: float(next(ticks)),
        started=0.0,
    )
    found = await interleaving.until_decided(run(125.0))
    assert found is not None and found.look.done and len(found.pairs) == 3
    assert order == ["B", "B", "A", "A", "B"]  # after the first A: A B | B A | A B
