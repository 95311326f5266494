"""Interleaved probing's comparison: the live server and the baseline server probed alternately
(A B A B …), each pair judged as one unit, so that a slow change shared by both sides (the
client machine's load, a drifting clock, a warming GPU room) cancels in each pair's ratio.

The interval is the one `analysis.comparison` gives a managed A/B's rounds (`RoundSpread`): the
pairs' log speedups d_i = log(now_i / base_i), log R ± t(P − 1) · s_d / √P, with R the pooled
now / base over the P pairs and s_d the standard deviation of the d_i. One pair has no spread of
its own: its interval is the runs' (each side's prior spread, `speedup`), and fewer than
`TENTATIVE_ROUNDS` pairs make a tentative verdict. The sequential rule (`analysis.sequential`)
looks after 3, 5 and 10 pairs, as after that many probes against a stored baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specmon.analysis.comparison import CONFIDENCE, Comparison, compare, round_spread
from specmon.analysis.pooled import pool
from specmon.analysis.sequential import Look, SequentialRule
from specmon.analysis.validity import LifetimeCheck, LifetimeState
from specmon.model import RunFigures


@dataclass(frozen=True, slots=True)
class Pair:
    """One probe of the live server (`now`) and the baseline server's probe next to it."""

    now: RunFigures
    base: RunFigures


def paired_comparison(pairs: Sequence[Pair], level: float = CONFIDENCE) -> Comparison | None:
    """The pairs' comparison at `level` (module docstring); None without pairs or where a side
    has no decode tok/s."""
    if not pairs:
        return None
    spread = round_spread([(pool([p.now]), pool([p.base])) for p in pairs])
    if spread is not None and spread.rounds != len(pairs):
        spread = None  # a pair without a decode speed: the pairs are not all comparable
    now, base = pool([p.now for p in pairs]), pool([p.base for p in pairs])
    return compare(now, base, spread, level)


def paired_step(
    rule: SequentialRule, pairs: Sequence[Pair], elapsed_s: float, budget_s: float
) -> Look:
    """The sequential rule after `pairs` took `elapsed_s`: a look at the pairs' comparison where
    this is a look, and whether to stop."""
    return rule.judge(
        len(pairs), lambda level: paired_comparison(pairs, level), elapsed_s, budget_s
    )


def why_not_interleaved(lifetime: LifetimeCheck) -> str | None:
    """Why the baseline server cannot be probed beside the live one, in a few words; None when
    it can: it answers and is the very process the baseline measured (`lifetime_check`)."""
    if lifetime.state == LifetimeState.SAME:
        return None
    if lifetime.state == LifetimeState.RELAUNCHED:
        return (
            "the baseline was taken on this address before the relaunch with speculation: no "
            "second server to probe"
        )
    if lifetime.state == LifetimeState.RESTARTED:
        return f"the baseline server is not the process the baseline measured ({lifetime.detail})"
    return f"the baseline server could not be confirmed as the one benched ({lifetime.detail})"
