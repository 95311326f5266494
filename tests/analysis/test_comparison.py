"""The one statistic (pooled runs) and the comparison built on it: every figure of a comparison
agrees with the others, whatever the runs."""

from __future__ import annotations

import math
from dataclasses import replace
from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st
from runs import run

from specmon.analysis.comparison import (
    PLAIN_SPREAD,
    SPECULATIVE_SPREAD,
    Verdict,
    break_even,
    compare,
    round_spread,
    side_spread,
    speedup,
    verdict,
)
from specmon.analysis.pooled import Pooled, pool, run_parts
from specmon.analysis.stats import t975


def test_design_story_break_even() -> None:
    # docs/design.md §1: a 29.9 ms cycle against 11.1 ms/token is 2.69; against 15.9 ms/token 1.88.
    assert break_even(29.9, 1000 / 11.1) == pytest.approx(2.69, abs=0.005)
    assert break_even(29.9, 1000 / 15.9) == pytest.approx(1.88, abs=0.005)
    with pytest.raises(ValueError, match="positive"):
        break_even(29.9, 0)


def test_pooled_is_tokens_over_time() -> None:
    runs = [run(60.0, 2.0, tokens=300), run(90.0, 3.0, tokens=600)]
    p = pool(runs)
    assert p.decode_tok_s == pytest.approx(900 / (5 + 600 / 90))
    assert p.accept_length == pytest.approx(900 / (150 + 200))
    assert p.cycle_ms == pytest.approx(1000 * (5 + 600 / 90) / 350)
    # The identity every comparison rests on: tok/s = 1000 · accept / cycle.
    assert p.decode_tok_s == pytest.approx(1000 * p.accept_length / p.cycle_ms)


def test_pooled_ttft_is_the_mean_of_every_runs_ttft() -> None:
    """TTFT is each run's wait, not a rate: the runs' mean, a buffered run's too (its first
    token's time holds where its decode timing does not); no runs, no TTFT."""
    buffered = replace(run(62.9, 2.0), ttft_ms=90.0, decode_tok_s=None, decode_s=None,
                       buffered=True)  # fmt: skip
    runs = [replace(run(60.0, 2.0, tokens=300), ttft_ms=30.0), run(90.0, 3.0), buffered]
    assert pool(runs).ttft_ms == pytest.approx((30.0 + 40.0 + 90.0) / 3)
    assert pool(runs).runs == 2
    assert pool([]).ttft_ms is None


def test_older_records_derive_their_parts() -> None:
    legacy = run(62.9, 2.1)
    legacy = replace(legacy, decode_tokens=None, decode_s=None, decode_steps=None)
    parts = run_parts(legacy)
    assert parts is not None
    assert parts.tokens == pytest.approx(499, rel=1e-3)
    assert parts.steps == pytest.approx(499 / 2.1, rel=1e-3)


def test_buffered_runs_keep_their_counts_but_not_their_timing() -> None:
    buffered = replace(
        run(62.9, 2.0), decode_tok_s=None, decode_s=None, cycle_ms=None, buffered=True
    )
    p = pool([buffered])
    assert p.decode_tok_s is None and p.cycle_ms is None
    assert p.accept_length == pytest.approx(2.0)


def test_the_story_is_a_win_against_the_true_baseline() -> None:
    base = pool([run(t) for t in (62.8, 62.9, 63.0, 62.9, 62.85)])
    spec = pool([run(t, 2.1) for t in (75.7, 75.9, 76.1, 75.8, 76.0)])
    c = compare(spec, base)
    assert c is not None
    assert c.speedup.value == pytest.approx(c.now_tok_s / c.base_tok_s - 1)
    assert c.verdict == Verdict.WINNING
    assert c.margin is not None and c.margin > 0
    stale = compare(spec, pool([run(t) for t in (88.7, 88.8, 88.9)]))
    assert stale is not None and stale.verdict == Verdict.LOSING
    assert stale.margin is not None and stale.margin < 0


def test_one_probe_varies_as_a_speculative_servers_run() -> None:
    # Issue 35: one probe against a steady plain baseline printed "+25.52% [+25.50%, +25.53%]
    # winning": the interval carried the baseline's spread alone. Now the probe's own spread is
    # a speculative server's typical run-to-run (3.5%), pooled in as ν₀ runs' worth.
    base = pool([run(300.0) for _ in range(5)])  # a steady plain server: no spread at all
    gain = speedup(pool([run(376.5, 2.0)]), base)
    assert gain is not None and gain.low is not None and gain.high is not None
    assert gain.now_runs == 1 and gain.one_probe and gain.assumed == SPECULATIVE_SPREAD.cv
    # The steady baseline's five runs (no spread of their own) pooled with the plain prior.
    base_cv2 = PLAIN_SPREAD.weight * PLAIN_SPREAD.cv**2 / (PLAIN_SPREAD.weight + 4)
    parts = [(SPECULATIVE_SPREAD.cv**2, 20.0), (base_cv2 / 5, 24.0)]  # (variance, df)
    df = sum(v for v, _ in parts) ** 2 / sum(v * v / d for v, d in parts)
    half = t975(df) * math.sqrt(sum(v for v, _ in parts))
    assert gain.high == pytest.approx(1.255 * math.exp(half) - 1)
    assert gain.low == pytest.approx(1.255 * math.exp(-half) - 1)
    assert gain.high - gain.low > 0.15  # not 0.03 points
    assert verdict(gain) == Verdict.WINNING  # +25% is still clear of ±7%
    near = speedup(pool([run(309.0, 2.0)]), base)  # +3% from one probe cannot tell
    assert near is not None and verdict(near) == Verdict.WITHIN_NOISE


def test_one_run_each_has_an_interval_from_the_priors() -> None:
    # One run on either side: each varies as its kind of server's runs (no verdict by sign).
    alone = speedup(pool([run(70.0, 2.0)]), pool([run(62.9)]))
    assert alone is not None and alone.low is not None and alone.high is not None
    assert alone.low < alone.value < alone.high
    # A baseline of one plain run against five probes spread 12%: the probes' own spread.
    probes = pool([run(t, 2.0) for t in (70.0, 82.0, 61.0, 71.0, 76.5)])
    mirrored = speedup(probes, pool([run(62.9)]))
    assert mirrored is not None and mirrored.assumed is None and not mirrored.one_probe


def test_the_prior_only_widens_a_sides_spread() -> None:
    steady = pool([run(t, 2.0) for t in (100.0, 100.1, 99.9)])
    noisy = pool([run(t, 2.0) for t in (100.0, 112.0, 90.0)])
    for side in (steady, noisy):
        assert side.rel_se is not None
        c, df, widened = side_spread(side, SPECULATIVE_SPREAD)
        own = side.rel_se * math.sqrt(side.runs)
        assert c >= own * (1 - 1e-12)
        assert side.runs - 1 <= df <= SPECULATIVE_SPREAD.weight + side.runs - 1
        assert widened == (own < SPECULATIVE_SPREAD.cv)
    assert side_spread(steady, SPECULATIVE_SPREAD)[0] < SPECULATIVE_SPREAD.cv
    # Runs far noisier than the prior (~11%) are judged on their own, with about their own
    # degrees of freedom (2), not the prior's 20.
    c, df, widened = side_spread(noisy, SPECULATIVE_SPREAD)
    assert not widened and df < 3


def test_two_probes_are_not_a_t1_interval() -> None:
    # Issue 35: two probes gave "+19.0% [-41.4%, +141.8%]" (t with 1 degree of freedom at
    # 98.3%); with the prior pooled in, two probes 3.5% apart stay a usable interval.
    base = pool([run(300.0) for _ in range(5)])
    two = pool([run(t, 2.0) for t in (352.0, 364.0)])
    gain = speedup(two, base, level=1 - 0.05 / 3)
    assert gain is not None and gain.low is not None and gain.high is not None
    assert gain.high - gain.low < 0.25 and verdict(gain) == Verdict.WINNING


@pytest.mark.slow
@given(
    base=st.lists(st.floats(20.0, 500.0), min_size=1, max_size=10),
    probe=st.floats(20.0, 500.0),
    level=st.sampled_from([0.95, 1 - 0.05 / 3]),
)
def test_one_probe_is_never_judged_on_less_than_its_assumed_spread(
    base: list[float], probe: float, level: float
) -> None:
    gain = speedup(pool([run(probe, 2.0)]), pool([run(t) for t in base]), level=level)
    assert gain is not None and gain.low is not None and gain.high is not None
    z = NormalDist().inv_cdf((1 + level) / 2)
    half = (math.log1p(gain.high) - math.log1p(gain.low)) / 2
    assert half >= z * SPECULATIVE_SPREAD.cv * (1 - 1e-9)
    assert gain.one_probe and gain.assumed == SPECULATIVE_SPREAD.cv


def test_an_interval_at_another_level() -> None:
    base = pool([run(t) for t in (60.0, 66.0, 62.0, 64.0, 62.5)])
    now = pool([run(t, 2.0) for t in (70.0, 72.0, 69.0)])
    at95, at99 = speedup(now, base), speedup(now, base, level=0.99)
    assert at95 is not None and at99 is not None and at99.level == 0.99
    assert at99.value == at95.value
    assert at99.low is not None and at95.low is not None and at99.low < at95.low


def _rounds(
    *pairs: tuple[tuple[float, ...], tuple[float, ...]],
) -> tuple[list[tuple[Pooled, Pooled]], Pooled, Pooled]:
    """Rounds of (speculative runs' tok/s, baseline runs' tok/s): the pooled sides of each
    round, and of all of them."""
    per_round = [(pool([run(t, 2.0) for t in s]), pool([run(t) for t in b])) for s, b in pairs]
    spec = pool([run(t, 2.0) for s, _ in pairs for t in s])
    base = pool([run(t) for _, b in pairs for t in b])
    return per_round, spec, base


def test_rounds_give_the_interval_with_rounds_minus_one_degrees_of_freedom() -> None:
    # +10% in one round and +2% in the other, steady runs: the runs alone call it a win; two
    # rounds are two draws of a launch's speedup, with one degree of freedom between them.
    per_round, spec, base = _rounds(
        ((66.0, 66.1, 65.9), (60.0, 60.1, 59.9)), ((61.2, 61.3, 61.1), (60.0, 60.1, 59.9))
    )
    spread = round_spread(per_round)
    assert spread is not None and spread.rounds == 2 and spread.tentative
    assert spread.speedups == pytest.approx((0.10, 0.02), abs=1e-3)
    runs_only, rounds = compare(spec, base), compare(spec, base, spread)
    assert runs_only is not None and rounds is not None
    assert rounds.speedup.value == runs_only.speedup.value  # the ratio of the pooled figures
    assert runs_only.verdict == Verdict.WINNING
    assert rounds.verdict == Verdict.WITHIN_NOISE and rounds.tentative
    logs = [math.log1p(g) for g in spread.speedups]
    half = t975(1) * abs(logs[0] - logs[1]) / math.sqrt(2) / math.sqrt(2)  # s_d / √R
    assert rounds.speedup.high == pytest.approx((1 + rounds.speedup.value) * math.exp(half) - 1)


def test_three_rounds_that_agree_are_a_firm_verdict() -> None:
    per_round, spec, base = _rounds(
        ((80.0, 81.0), (60.0, 60.5)), ((92.0, 93.0), (69.0, 69.6)), ((70.0, 70.5), (53.0, 53.2))
    )
    spread = round_spread(per_round)
    c = compare(spec, base, spread)
    assert spread is not None and not spread.tentative
    assert c is not None and c.verdict == Verdict.WINNING and not c.tentative


def test_one_round_is_the_runs_interval_and_tentative() -> None:
    per_round, spec, base = _rounds(((66.0, 66.1), (60.0, 60.1)))
    spread = round_spread(per_round)
    assert spread is not None and spread.rounds == 1 and spread.variance is None
    c = compare(spec, base, spread)
    assert c is not None and c.tentative
    assert c.speedup == speedup(spec, base)  # the runs' noise only


speeds = st.lists(st.floats(20.0, 500.0), min_size=1, max_size=6)
accepts = st.floats(1.0, 5.0)


@pytest.mark.slow
@given(now=speeds, base=speeds, accept=accepts, spread=st.floats(0.0, 0.3))
def test_every_figure_agrees(
    now: list[float], base: list[float], accept: float, spread: float
) -> None:
    now_runs = [run(t, accept * (1 + spread * ((i % 3) - 1) / 3)) for i, t in enumerate(now)]
    c = compare(pool(now_runs), pool([run(t) for t in base]))
    assert c is not None
    # The speedup is the ratio of the two figures shown beside it.
    assert c.speedup.value == pytest.approx(c.now_tok_s / c.base_tok_s - 1)
    # The margin has the speedup's sign: accept / break-even = now / base.
    assert c.break_even is not None and c.margin is not None
    assert (c.margin + c.break_even) / c.break_even == pytest.approx(c.now_tok_s / c.base_tok_s)
    # The verdict never contradicts the speedup's sign or its interval.
    low = c.speedup.low if c.speedup.low is not None else c.speedup.value
    high = c.speedup.high if c.speedup.high is not None else c.speedup.value
    if c.verdict == Verdict.WINNING:
        assert c.speedup.value > 0 and low > 0
    elif c.verdict == Verdict.LOSING:
        assert c.speedup.value < 0 and high < 0
    else:
        assert low <= 0 <= high


def test_nothing_to_compare_without_speed() -> None:
    empty = Pooled(0, None, None, None, None)
    assert compare(empty, pool([run(62.9)])) is None
