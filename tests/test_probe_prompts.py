"""The probe's prompt set: the built-in categories, the user's JSONL file, and the rotation."""

from __future__ import annotations

from pathlib import Path

import pytest

from specmon.config import load_config
from specmon.errors import TargetError
from specmon.probe_prompts import (
    BUILTIN_SET,
    DEFAULT_PROMPT,
    DEFAULT_SET,
    ProbePrompt,
    ProbePromptsError,
    Rotation,
    load_probe_prompts,
    probe_prompts_setting,
)
from specmon.sources.backends import llamacpp, openai_compat
from specmon.sources.probe import generate_payload


def _file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "prompts.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_file_gives_each_line_its_category_and_options(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        '{"category": "sql", "prompt": "Write a query"}',
        "",
        '{"category": " chat ", "prompt": "Hi?", "temperature": 0.7, "max_tokens": 64}',
    )
    assert load_probe_prompts(path) == (
        ProbePrompt("sql", "Write a query"),
        ProbePrompt("chat", "Hi?", 0.7, 64),
    )


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("not json", "prompts.jsonl:2: not JSON"),
        ("[" * 5000 + "]" * 5000, "prompts.jsonl:2: not JSON .nested more than 64 levels deep"),
        ("[1, 2]", "prompts.jsonl:2: not a JSON object"),
        ('{"prompt": "x"}', "prompts.jsonl:2: category: a non-empty string is required"),
        ('{"category": "", "prompt": "x"}', "prompts.jsonl:2: category: a non-empty string"),
        ('{"category": "' + "c" * 25 + '", "prompt": "x"}', "prompts.jsonl:2: category: at most"),
        ('{"category": "a"}', "prompts.jsonl:2: prompt: a non-empty string is required"),
        ('{"category": "a", "prompt": 3}', "prompts.jsonl:2: prompt: a non-empty string"),
        ('{"category": "a", "prompt": "x", "temperature": "hot"}', ":2: temperature: a number"),
        ('{"category": "a", "prompt": "x", "temperature": 5}', ":2: temperature: a number from 0"),
        ('{"category": "a", "prompt": "x", "max_tokens": 1}', ":2: max_tokens: a whole number"),
        ('{"category": "a", "prompt": "x", "max_tokens": 2.5}', ":2: max_tokens: a whole number"),
        ('{"category": "a", "prompt": "x", "temp": 1}', ":2: unknown field 'temp'; known:"),
    ],
)
def test_every_bad_line_is_named_with_its_field(tmp_path: Path, line: str, error: str) -> None:
    path = _file(tmp_path, '{"category": "ok", "prompt": "fine"}', line)
    with pytest.raises(ProbePromptsError, match=error) as caught:
        load_probe_prompts(path)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(str(path))


def test_an_empty_or_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProbePromptsError, match="no prompts"):
        load_probe_prompts(_file(tmp_path, "", "  "))
    with pytest.raises(ProbePromptsError, match="cannot read it"):
        load_probe_prompts(tmp_path / "absent.jsonl")


def test_the_setting_takes_builtin_or_a_path(tmp_path: Path) -> None:
    assert probe_prompts_setting("builtin") == BUILTIN_SET
    path = _file(tmp_path, '{"category": "x", "prompt": "y"}')
    assert probe_prompts_setting(str(path)) == (ProbePrompt("x", "y"),)


def test_config_defaults_to_the_single_prompt_and_names_a_bad_file(tmp_path: Path) -> None:
    empty = tmp_path / "none.toml"
    empty.write_text("")
    config = load_config({}, config_path=str(empty), environ={})
    assert config.probe_prompts == DEFAULT_SET
    assert DEFAULT_SET[0].prompt == DEFAULT_PROMPT
    env = {"SPECMON_PROBE_PROMPTS": "builtin"}
    assert load_config({}, config_path=str(empty), environ=env).probe_prompts == BUILTIN_SET
    bad = _file(tmp_path, '{"category": "a"}')
    with pytest.raises(TargetError, match=r"command line: probe_prompts: .*:1: prompt:"):
        load_config({"probe_prompts": str(bad)}, config_path=str(empty), environ={})


def test_rotation_takes_one_category_per_probe_round_robin() -> None:
    prompts = [
        ProbePrompt("code", "c1"),
        ProbePrompt("chat", "h1"),
        ProbePrompt("code", "c2"),
        ProbePrompt("math", "m1"),
    ]
    rotation = Rotation(prompts)
    assert rotation.categories == ("code", "chat", "math")
    sent = [rotation.next().prompt for _ in range(6)]
    assert sent == ["c1", "h1", "m1", "c2", "h1", "m1"]


def test_a_set_of_one_always_sends_its_prompt() -> None:
    rotation = Rotation(DEFAULT_SET)
    assert {rotation.next().prompt for _ in range(3)} == {DEFAULT_PROMPT}


def test_every_backend_sends_the_prompts_temperature() -> None:
    assert generate_payload("p", 8, 0.7)["sampling_params"]["temperature"] == 0.7
    assert openai_compat.completions_payload("p", 8, 0.7)["temperature"] == 0.7
    assert llamacpp.completion_payload("p", 8, 0.7)["temperature"] == 0.7
    assert generate_payload("p", 8)["sampling_params"]["temperature"] == 0
