"""Acceptance by position, the cycle-cost model and the what-if predictions: table-driven, with
the real captures' numbers where they exist."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmon.analysis.acceptance import (
    extended_rates,
    from_chunks,
    from_histogram,
    pooled_positions,
    tokens_per_step,
)
from specmon.analysis.cycle_model import CycleFit, CyclePoint, drafts_without_model, fit_cycle
from specmon.analysis.pooled import Pooled
from specmon.analysis.stats import t975
from specmon.analysis.step_yield import step_yield
from specmon.model import PositionSource, ProbeChunk, RunFigures
from specmon.whatif.prediction import what_if


def test_histogram_of_the_real_sglang_0517_stream() -> None:
    """[14, 6, 5, 22]: 47 verify steps by drafts accepted (fixtures/sglang-0.5.17 stream 0)."""
    found = from_histogram([14, 6, 5, 22])
    assert found is not None and found.source == PositionSource.HISTOGRAM
    assert found.steps == 47
    assert found.rates == pytest.approx((33 / 47, 27 / 47, 22 / 47))
    # 1 + Σ a_i is SGLang's tokens per step: (47 + 82) / 47, 82 correct drafts.
    assert tokens_per_step(found.rates, 3) == pytest.approx((47 + 82) / 47)


@pytest.mark.parametrize(("histogram", "expected"), [([], None), ([5], None), ([0, 0, 0], None)])
def test_histograms_that_say_nothing(histogram: list[int], expected: None) -> None:
    assert from_histogram(histogram) is expected


def test_chunks_as_steps_and_a_chunk_holding_several() -> None:
    counts = [1, 2, 5, 6, 8]  # steps adding 1, 3, 1, 2 tokens: 0, 2, 0, 1 drafts accepted
    chunks = [ProbeChunk(0.01 * i, c) for i, c in enumerate(counts)]
    found = from_chunks(chunks, 2)
    assert found is not None and found.source == PositionSource.CHUNKS
    assert found.rates == pytest.approx((2 / 4, 1 / 4))
    assert from_chunks(chunks, 1) is None  # a step accepted 2 drafts: not one step per chunk


def _run(rates: tuple[float, ...] | None, steps: float | None) -> RunFigures:
    return RunFigures(
        100,
        10,
        5.0,
        1.0,
        100.0,
        110.0,
        2.0,
        2.0,
        50,
        10.0,
        10.0,
        11.0,
        position_accept=rates,
        position_steps=steps,
        position_source=PositionSource.COUNTERS,
    )


def test_runs_pool_by_their_drafting_steps() -> None:
    pooled = pooled_positions([_run((0.8, 0.4), 30), _run((0.5, 0.1), 10), _run(None, None)])
    assert pooled is not None
    assert pooled.rates == pytest.approx(((0.8 * 30 + 0.5 * 10) / 40, (0.4 * 30 + 0.1 * 10) / 40))
    assert pooled.steps == 40
    assert pooled_positions([_run(None, None)]) is None


@pytest.mark.parametrize(
    ("rates", "k", "expected"),
    [
        ((0.8, 0.4), 2, (0.8, 0.4)),
        ((0.8, 0.4), 4, (0.8, 0.4, 0.2, 0.1)),  # r = 0.4 / 0.8
        ((0.6,), 3, (0.6, 0.36, 0.216)),  # one position: r = a_0
        ((0.9, 0.9), 3, (0.9, 0.9, 0.9)),  # r capped at 1
    ],
)
def test_extrapolation_past_the_known_positions(
    rates: tuple[float, ...], k: int, expected: tuple[float, ...]
) -> None:
    assert extended_rates(rates, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("algorithm", "lookup"),
    [
        ("NGRAM", True),
        ("ngram", True),
        ("ngram-simple", True),
        ("lookup", True),
        ("EAGLE3", False),
        ("draft-simple", False),
        ("STANDALONE", False),
    ],
)
def test_which_algorithms_draft_without_a_model(algorithm: str, lookup: bool) -> None:
    assert drafts_without_model(algorithm) is lookup


def test_cycle_fits() -> None:
    now = CyclePoint(4, 20.0, "now")
    per_draft = fit_cycle([now], 10.0, model_drafts=True)
    assert per_draft is not None and per_draft.fit == CycleFit.PER_DRAFT
    assert per_draft.cycle_ms(0) == 10.0 and per_draft.cycle_ms(2) == pytest.approx(15.0)
    assert per_draft.cycle_range(2) == pytest.approx((15.0, 20.0))  # reaches "fixed"
    assert per_draft.cycle_range(4) == (20.0, 20.0)  # measured: nothing assumed
    fixed = fit_cycle([now], 10.0, model_drafts=False)
    assert fixed is not None and fixed.fit == CycleFit.FIXED and fixed.cycle_ms(2) == 20.0
    assert fixed.cycle_range(6) == pytest.approx((20.0, 25.0))
    # No baseline: fixed, reaching "all per verified token", T(K)·(k + 1)/(K + 1).
    alone = fit_cycle([now], None, model_drafts=True)
    assert alone is not None and alone.fit == CycleFit.FIXED and alone.cycle_ms(2) == 20.0
    assert alone.cycle_range(2) == pytest.approx((12.0, 20.0))
    assert alone.cycle_range(6) == pytest.approx((20.0, 28.0))
    assert "T(K)·(k + 1)/(K + 1)" in alone.assumption
    # Two lengths measured: the line, fixed cost and per-draft cost both measured.
    line = fit_cycle(
        [now, CyclePoint(1, 14.0, "#3"), CyclePoint(1, 14.2, "#5")], 10.0, model_drafts=True
    )
    assert line is not None and line.fit == CycleFit.LINE
    assert line.beta_ms == pytest.approx((20.0 - 14.1) / 3)
    assert line.cycle_ms(1) == pytest.approx(14.1) and line.cycle_ms(0) == 10.0
    assert "k = 1, 4" in line.assumption
    assert fit_cycle([], 10.0, model_drafts=True) is None


def test_predictions_keep_the_measured_point_and_the_formulas() -> None:
    """At K the prediction is the measurement; elsewhere decode = 1000 · AL / T and the speedup
    is decode / baseline − 1."""
    positions = from_histogram([10, 10, 10, 70])  # a = 0.9, 0.8, 0.7
    assert positions is not None
    now = Pooled(
        runs=3, decode_tok_s=1000 * 3.2 / 20.0, rel_se=0.01, accept_length=3.2, cycle_ms=20.0
    )
    base = Pooled(runs=3, decode_tok_s=100.0, rel_se=0.01, accept_length=None, cycle_ms=None)
    cycle = fit_cycle([CyclePoint(3, 20.0, "now")], base.ms_per_token, model_drafts=True)
    assert cycle is not None
    result = what_if(now, positions, 3, cycle, base)
    assert result is not None
    assert [p.draft_tokens for p in result.predictions] == [1, 2, 3, 4, 5]
    current = result.current
    assert current.measured and current.tokens_per_step == pytest.approx(3.2)
    assert current.decode_tok_s == pytest.approx(now.decode_tok_s)
    for p in result.predictions:
        assert p.decode_tok_s == pytest.approx(1000 * p.tokens_per_step / p.cycle_ms)
        assert p.speedup == pytest.approx(p.decode_tok_s / 100.0 - 1)
        assert p.comparison is not None
        assert p.comparison.break_even == pytest.approx(p.cycle_ms / base.ms_per_token)  # type: ignore[operator]
        assert p.decode_low is not None and p.decode_high is not None
        assert p.decode_low < p.decode_tok_s < p.decode_high
    # AL(k) = 1 + (AL_K − 1) · S(k) / S(K): S = 0.9, 1.7, 2.4.
    assert result.at(1).tokens_per_step == pytest.approx(1 + 2.2 * 0.9 / 2.4)  # type: ignore[union-attr]
    assert result.at(4).extrapolated and not result.at(2).extrapolated  # type: ignore[union-attr]
    # The model's range widens the interval away from K.
    width = {p.draft_tokens: p.decode_high / p.decode_low for p in result.predictions}  # type: ignore[operator]
    assert width[1] > width[3] and width[5] > width[3]
    assert result.best.decode_tok_s == max(p.decode_tok_s for p in result.predictions)


def test_steps_that_draft_nothing_stay_when_k_changes() -> None:
    """n-gram: 16% of steps found no match (the real vLLM's share at k = 4). Those steps keep
    yielding one token each at any k; only the drafting steps' yield follows S(k)."""
    positions = from_histogram([6, 8, 9, 7, 70])  # a = 0.94, 0.86, 0.77, 0.70
    assert positions is not None
    now = Pooled(3, 1000 * 3.757 / 24.4, 0.01, 3.757, 24.4)
    cycle = fit_cycle([CyclePoint(4, 24.4, "now")], None, model_drafts=False)
    assert cycle is not None
    plain = what_if(now, positions, 4, cycle, None)
    lookup = what_if(now, positions, 4, cycle, None, non_drafting=0.157)
    assert plain is not None and lookup is not None
    assert lookup.current.tokens_per_step == pytest.approx(3.757)  # the measurement, both ways
    # Per 1000 tokens: 266 steps, 41.8 of them without a draft; at k = 2 the other 958 tokens
    # come g(2) = 1 + 3.27 · S(2)/S(4) per drafting step.
    g_k = (3.757 - 0.157) / (1 - 0.157)
    g_2 = 1 + (g_k - 1) * (0.94 + 0.86) / (0.94 + 0.86 + 0.77 + 0.70)
    z = 0.157 / 3.757
    assert lookup.at(2).tokens_per_step == pytest.approx(1 / (z + (1 - z) / g_2))  # type: ignore[union-attr]
    assert lookup.at(2).tokens_per_step > plain.at(2).tokens_per_step  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("accept", "rates", "n0", "measured_at_2"),
    [
        # The real servers at k = 4 (docs/compatibility.md) and what a bench at k = 2 measured.
        (3.757, (0.94, 0.862, 0.767, 0.698), 0.157, 2.634),  # vLLM n-gram
        (2.689, (0.474, 0.411, 0.405, 0.40), 0.0, 2.112),  # llama.cpp draft model
    ],
)
def test_the_tokens_per_step_range_holds_the_real_servers(
    accept: float, rates: tuple[float, ...], n0: float, measured_at_2: float
) -> None:
    steps = step_yield(accept, rates, 4, n0, 4)
    assert steps.independent(4) == pytest.approx(accept)
    assert steps.correlated(4) == pytest.approx(accept)
    point, low, high = steps.tokens(2)
    assert point == steps.independent(2)
    assert 0.99 * low <= measured_at_2 <= 1.01 * high  # the bench's own noise: ~1%
    assert steps.correlated(2) == pytest.approx(measured_at_2, rel=0.01)


def test_independent_draws_match_vllms_formula() -> None:
    """Every step drafting and a_i measured exactly: AL(k) = 1 + Σ_{i<k} a_i."""
    rates = (0.82, 0.64, 0.5)
    steps = step_yield(1 + sum(rates), rates, 3, 0.0, 5)
    assert steps.independent(1) == pytest.approx(1.82)
    assert steps.independent(2) == pytest.approx(2.46)
    point, low, high = steps.tokens(5)  # past the known positions: a range
    assert low == pytest.approx(1 + sum(rates)) and high == pytest.approx(1 + sum(rates) + 1.0)
    assert low < point < high


def test_a_line_that_falls_with_k_is_set_aside_for_the_one_cycle_model() -> None:
    # Issue 24: T(2) = 30 ms and T(3) = 12 ms made the line predict T(4) = −6 ms and negative
    # tok/s (a line reaching 0 divided by zero).
    falling = fit_cycle(
        [CyclePoint(3, 12.0, "now"), CyclePoint(2, 30.0, "#1")], 10.0, model_drafts=False
    )
    assert falling is not None and falling.fit == CycleFit.FIXED
    assert falling.cycle_ms(4) == 12.0 and falling.cycle_ms(3) == 12.0  # the current point
    assert falling.note is not None and "falls as k grows" in falling.note
    assert "30.0 ms at k = 2, 12.0 ms at k = 3" in falling.assumption
    steep = fit_cycle(
        [CyclePoint(3, 10.0, "now"), CyclePoint(4, 20.0, "#1")], 5.0, model_drafts=True
    )
    assert steep is not None and steep.fit == CycleFit.PER_DRAFT
    assert steep.note is not None and "reaches T(1) = -10.0 ms" in steep.note
    assert all(steep.cycle_range(k)[0] > 0 for k in range(1, 7))


def test_a_cycle_under_the_baselines_step_is_not_split() -> None:
    # 8 ms against a 10 ms plain step: the per-draft extreme would make every draft save 0.7 ms.
    under = fit_cycle([CyclePoint(3, 8.0, "now")], 10.0, model_drafts=True)
    assert under is not None and under.fit == CycleFit.FIXED and under.other is None
    assert under.note is not None and "no longer than the baseline's step" in under.note


points = st.lists(st.tuples(st.integers(1, 8), st.floats(0.5, 200.0)), min_size=1, max_size=5).map(
    lambda found: [CyclePoint(k, t, f"#{i}") for i, (k, t) in enumerate(found)]
)


@pytest.mark.slow
@given(found=points, base=st.one_of(st.none(), st.floats(0.5, 100.0)), model=st.booleans())
def test_every_cycle_is_positive_and_never_falls_with_k(
    found: list[CyclePoint], base: float | None, model: bool
) -> None:
    cycle = fit_cycle(found, base, model_drafts=model)
    assert cycle is not None
    for k in range(1, 10):
        low, high = cycle.cycle_range(k)
        assert 0 < low <= cycle.cycle_ms(k) <= high
        assert cycle.cycle_ms(k + 1) >= cycle.cycle_ms(k)
    positions = from_histogram([10, 20, 30, 40])
    assert positions is not None
    k_now = found[0].draft_tokens
    now = Pooled(3, 1000 * 2.0 / found[0].cycle_ms, 0.02, 2.0, found[0].cycle_ms)
    result = what_if(now, positions, k_now, cycle, None)
    assert result is not None
    for p in result.predictions:
        assert p.decode_tok_s > 0 and p.decode_low is not None and p.decode_low > 0


def test_the_interval_is_the_models_range_widened_by_the_runs() -> None:
    """[1000 · AL_low / T_high · exp(−t·s), 1000 · AL_high / T_low · exp(t·s)]: the models'
    range is a range, not a ±1.96σ spread to multiply by t."""
    positions = from_histogram([10, 10, 10, 70])
    assert positions is not None
    now = Pooled(runs=3, decode_tok_s=160.0, rel_se=0.01, accept_length=3.2, cycle_ms=20.0)
    base = Pooled(runs=3, decode_tok_s=100.0, rel_se=0.01, accept_length=None, cycle_ms=None)
    cycle = fit_cycle([CyclePoint(3, 20.0, "now")], base.ms_per_token, model_drafts=True)
    assert cycle is not None
    result = what_if(now, positions, 3, cycle, base)
    assert result is not None
    steps = step_yield(3.2, positions.rates[:3], 3, 0.0, 5)
    half = t975(2) * 0.01
    for p in result.predictions:
        _, al_low, al_high = steps.tokens(p.draft_tokens)
        t_low, t_high = cycle.cycle_range(p.draft_tokens)
        assert p.decode_low == pytest.approx(1000 * al_low / t_high * math.exp(-half))
        assert p.decode_high == pytest.approx(1000 * al_high / t_low * math.exp(half))
        assert p.comparison is not None and p.comparison.speedup.low is not None
        # The speedup's interval spans the same range, widened by both sides' noise.
        assert p.comparison.speedup.low < 1000 * al_low / t_high / 100.0 - 1
        assert p.comparison.speedup.high is not None
        assert p.comparison.speedup.high > 1000 * al_high / t_low / 100.0 - 1


def test_the_best_named_is_the_one_the_advisor_would_name() -> None:
    """k = 2's point estimate beats k = 3's but its interval does not: "best" stays k = 3."""
    positions = from_histogram([10, 10, 10, 70])
    assert positions is not None
    now = Pooled(runs=3, decode_tok_s=160.0, rel_se=0.05, accept_length=3.2, cycle_ms=20.0)
    base = Pooled(runs=3, decode_tok_s=100.0, rel_se=0.01, accept_length=None, cycle_ms=None)
    cycle = fit_cycle(
        [CyclePoint(3, 20.0, "now"), CyclePoint(1, 10.5, "#2")], 10.0, model_drafts=True
    )
    assert cycle is not None
    result = what_if(now, positions, 3, cycle, base)
    assert result is not None
    assert result.best.draft_tokens != 3
    assert result.faster is None and result.choice.draft_tokens == 3
