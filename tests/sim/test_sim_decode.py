"""The pure decode model: acceptance distribution, step times, determinism."""

from __future__ import annotations

import pytest

from specmon.sim import SimConfig
from specmon.sim.decode import (
    DecodeModel,
    acceptance_distribution,
    count_prompt_tokens,
    mean_tokens_per_step,
    request_rng,
)


@pytest.mark.parametrize(
    ("accept_length", "draft_tokens"),
    [(2.1, 3), (1.0, 3), (3.0, 3), (2.7234, 4), (3.4, 4), (1.5, 2), (4.2, 6)],
)
def test_distribution_mean_is_the_accept_length(accept_length: float, draft_tokens: int) -> None:
    probs = acceptance_distribution(accept_length, draft_tokens)
    assert len(probs) == draft_tokens
    assert sum(probs) == pytest.approx(1.0)
    assert all(p >= 0 for p in probs)
    assert mean_tokens_per_step(probs) == pytest.approx(accept_length, abs=1e-9)


def test_default_model_is_the_seed_story() -> None:
    model = DecodeModel.from_config(SimConfig())
    assert model.speculative
    assert model.num_draft_tokens == 3  # EAGLE3 steps 2, topk 1, draft tokens 3
    assert model.tokens_per_step == pytest.approx(2.1)
    assert model.step_ms(1) == pytest.approx(27.6)
    assert 1000 / SimConfig().plain_step_ms == pytest.approx(62.9)
    # Break-even of the seed: cycle / baseline ms-per-token = 27.6 / 15.9 < 2.1 -> winning.
    assert model.step_ms(1) / SimConfig().plain_step_ms < model.tokens_per_step


def test_concurrency_slows_steps_linearly() -> None:
    model = DecodeModel.from_config(SimConfig(concurrency_slowdown=0.1))
    assert model.step_ms(1) == pytest.approx(27.6)
    assert model.step_ms(3) == pytest.approx(27.6 * 1.2)
    plain = DecodeModel.from_config(SimConfig(speculative_algorithm=None))
    assert plain.step_ms(1) == pytest.approx(1000 / 62.9)
    assert plain.draw_accepted(request_rng(0, 0, 0)) == 0


def test_prefill_cost_grows_with_uncached_tokens() -> None:
    model = DecodeModel.from_config(SimConfig(ttft_ms=40.0, prefill_ms_per_token=0.1))
    assert model.prefill_ms(0) == pytest.approx(40.0)
    assert model.prefill_ms(100) == pytest.approx(50.0)


def test_draws_are_seeded_and_match_the_distribution() -> None:
    model = DecodeModel.from_config(SimConfig(accept_length=2.1))
    first = [model.draw_accepted(request_rng(7, 0, 3)) for _ in range(20)]
    again = [model.draw_accepted(request_rng(7, 0, 3)) for _ in range(20)]
    assert first == again  # fresh RNGs with the same seed draw the same sequence
    rng = request_rng(1, 0, 0)
    draws = [model.draw_accepted(rng) for _ in range(20000)]
    assert set(draws) <= {0, 1, 2}
    assert sum(d + 1 for d in draws) / len(draws) == pytest.approx(2.1, abs=0.03)


def test_prompt_tokens_are_words_or_ids() -> None:
    assert count_prompt_tokens("one two  three\nfour") == 4
    assert count_prompt_tokens(None, [1, 2, 3]) == 3
    assert count_prompt_tokens("") == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"version": "0.5.99"},
        {"accept_length": 0.9},  # less than the bonus token of every step
        {"speculative_num_draft_tokens": 1},
        {"stream_interval": 0},
    ],
)
def test_config_rejects_impossible_settings(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"."):
        SimConfig(**bad)  # type: ignore[arg-type]


def test_an_accept_length_over_the_draft_tokens_is_clamped_for_a_sweep() -> None:
    """`--accept-length 2.1` with 2 draft tokens (a sweep's shortest draft): every draft
    accepted, 2 tokens per step, where it raised before."""
    short = SimConfig(speculative_num_steps=1, speculative_num_draft_tokens=2, accept_length=2.1)
    assert short.accept_length_used == 2.0
    assert DecodeModel.from_config(short).probs == pytest.approx((0.0, 1.0))
    longer = SimConfig(speculative_num_steps=3, speculative_num_draft_tokens=4, accept_length=2.1)
    assert longer.accept_length_used == 2.1
    assert mean_tokens_per_step(DecodeModel.from_config(longer).probs) == pytest.approx(2.1)
