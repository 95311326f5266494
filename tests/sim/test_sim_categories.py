"""The simulator's workload categories: read from a prompt's text, each with its own acceptance."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from sim_helpers import StartSim, fast

from specmon.analysis.figures import run_figures
from specmon.analysis.pooled import pool
from specmon.probe_prompts import BUILTIN_SET, DEFAULT_PROMPT
from specmon.sim.__main__ import config_from_args
from specmon.sim.categories import CATEGORIES, DEFAULT_ACCEPT_BY_CATEGORY, classify_prompt
from specmon.sim.config import SimConfig
from specmon.sim.decode import DecodeModel, request_rng
from specmon.sim.openai_api import _chat_text
from specmon.sources.probe import run_probe


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Please repeat after me: hello world", "repetitive"),
        ("Copy out this paragraph verbatim.", "repetitive"),
        ("Write a function that reverses a linked list", "code"),
        ("```\nprint(1)\n```\nWhat does this print?", "code"),
        ("Fix the bug in my SQL query", "code"),
        ("Solve for x: 2x + 3 = 11", "math"),
        ("What is 17 * 23?", "math"),
        ("Summarize this article in two lines", "summarisation"),
        ("tl;dr of the meeting notes below", "summarisation"),
        ("How was your weekend?", "chat"),
        ("What should I cook tonight?  ", "chat"),
        (DEFAULT_PROMPT, None),
        ("one two three four five six seven eight nine ten " * 6, None),
        ("", None),
    ],
)
def test_classify_prompt_reads_the_text(text: str, category: str | None) -> None:
    assert classify_prompt(text) == category


def test_the_builtin_probe_prompts_land_in_their_own_categories() -> None:
    assert {p.category for p in BUILTIN_SET} == set(CATEGORIES)
    for prompt in BUILTIN_SET:
        assert classify_prompt(prompt.prompt) == prompt.category


def test_each_category_draws_at_its_own_accept_length() -> None:
    config = SimConfig(speculative_num_draft_tokens=4)
    model = DecodeModel.from_config(config)
    for category, wanted in DEFAULT_ACCEPT_BY_CATEGORY.items():
        rng = request_rng(0, 0, 0)
        steps = 20_000
        mean = 1 + sum(model.draw_accepted(rng, category) for _ in range(steps)) / steps
        assert mean == pytest.approx(wanted, rel=0.02), category
    rng = request_rng(0, 0, 0)
    unmatched = 1 + sum(model.draw_accepted(rng, None) for _ in range(20_000)) / 20_000
    assert unmatched == pytest.approx(config.accept_length, rel=0.02)


def test_a_category_above_the_draft_tokens_is_clamped_like_accept_length() -> None:
    config = SimConfig(speculative_num_draft_tokens=3)
    assert config.accept_length_of("repetitive") == 3.0
    assert config.accept_length_of("code") == 2.6
    assert config.accept_length_of(None) == config.accept_length


def test_bad_category_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown prompt category 'poetry'"):
        SimConfig(accept_by_category={"poetry": 2.0})
    with pytest.raises(ValueError, match="at least 1"):
        SimConfig(accept_by_category={"code": 0.5})


def test_sim_flag_overrides_some_categories_or_turns_them_off() -> None:
    config = config_from_args(["--accept-by-category", "code=3.1,chat=1.5"])
    assert config.accept_by_category == {**DEFAULT_ACCEPT_BY_CATEGORY, "code": 3.1, "chat": 1.5}
    assert config_from_args(["--accept-by-category", "none"]).accept_by_category == {}
    assert config_from_args([]).accept_by_category == DEFAULT_ACCEPT_BY_CATEGORY


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("poetry=2", "unknown category 'poetry'"),
        ("code=fast", "at least 1"),
        ("code=0.9", "at least 1"),
    ],
)
def test_sim_flag_says_what_is_wrong(
    value: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        config_from_args(["--accept-by-category", value])
    assert error in capsys.readouterr().err


@pytest.mark.slow
async def test_the_probe_measures_each_categorys_truth_within_two_percent(
    start_sim: StartSim,
) -> None:
    """Done means: specmon's per-category accept length within 2% of the simulator's truth."""
    config = fast(speculative_num_draft_tokens=4, cycle_ms=0.5)
    sim = await start_sim(config)
    async with httpx.AsyncClient(base_url=sim.url, timeout=10.0) as client:
        for prompt in BUILTIN_SET:
            runs = [
                run_figures(await run_probe(client, prompt=prompt.prompt, max_tokens=1500))
                for _ in range(3)
            ]
            measured = pool(runs).accept_length
            truth = config.accept_length_of(prompt.category)
            assert measured == pytest.approx(truth, rel=0.02), prompt.category


def test_a_chat_request_is_read_from_its_last_user_message() -> None:
    messages = [
        {"role": "system", "content": "You write Python code."},
        {"role": "user", "content": "Summarise our meeting notes"},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "How was your weekend?"},
    ]
    assert classify_prompt(_chat_text(messages)) == "chat"
    assert _chat_text("not a list") == ""


async def test_the_ground_truth_record_names_each_requests_category(
    start_sim: StartSim, tmp_path: Path
) -> None:
    path = tmp_path / "truth.jsonl"
    sim = await start_sim(fast(record_path=str(path)))
    async with httpx.AsyncClient(base_url=sim.url, timeout=10.0) as client:
        for text in ("How was your weekend?", DEFAULT_PROMPT):
            await run_probe(client, prompt=text, max_tokens=8)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["category"] for r in rows] == ["chat", None]
