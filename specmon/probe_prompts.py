"""What the dashboard's probe sends: a set of prompts by category, rotated one category per probe.

Acceptance depends on the workload (code drafts well, chat poorly, repeated text best), so one
fixed prompt says little about a server's traffic. The built-in set holds one prompt of each
common kind; `--probe-prompts FILE` gives the user's own (JSONL, `load_probe_prompts`). The
default stays the one prompt every baseline and snapshot is taken with (docs/usage.md says why).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from specmon.model import Protocol
from specmon.nesting import TooDeep, loads_json

DEFAULT_MAX_TOKENS = 256
"""Tokens per probe and per baseline run by default, on every surface (the dashboard's probe
and `b`, `check`, `bench`, `whatif`, `ab`, the demo): one protocol, so that a first baseline
applies everywhere (docs/design.md §5)."""

DEFAULT_PROMPT = (
    "Write a detailed, step by step explanation of how a CPU executes an instruction, "
    "from fetch to write-back, with an example for each stage."
)
"""The probe's prompt when none is given: one long, open-ended answer."""
DEFAULT_CATEGORY = "general"
"""The category of the single default prompt (a set of one)."""
BUILTIN = "builtin"
"""The `--probe-prompts` value that selects the built-in category set instead of a file."""
MAX_CATEGORY_CHARS = 24
"""A category names a row of the Speculation panel and a column of `check`: kept short."""


@dataclass(frozen=True, slots=True)
class ProbePrompt:
    """One prompt the probe may send."""

    category: str
    prompt: str
    temperature: float = 0.0
    max_tokens: int | None = None
    """None: the probe's `--probe-tokens`."""


DEFAULT_SET = (ProbePrompt(DEFAULT_CATEGORY, DEFAULT_PROMPT),)

# One prompt per category, each of the shape the simulator (and a real drafter) tells apart:
# code asks for a function, chat is a question, math an equation to solve, summarisation a text
# to shorten, repetitive a line to repeat (specmon.sim.categories classifies them by content).
BUILTIN_SET = (
    ProbePrompt(
        "code",
        "Implement a Python function that parses an ISO 8601 timestamp and returns a timezone "
        "aware datetime, with type hints, a docstring and pytest unit tests.",
    ),
    ProbePrompt(
        "chat",
        "I'm planning a weekend in Lisbon with two friends who love food and live music. "
        "Which neighbourhoods would you suggest we stay in, and why?",
    ),
    ProbePrompt(
        "math",
        "Solve the equation 3x^2 - 12x + 9 = 0 step by step, then check each root by "
        "substituting it back into the equation.",
    ),
    ProbePrompt(
        "summarisation",
        "Summarise the following text in three sentences. The printing press spread across "
        "Europe within decades of its invention in Mainz. Printed books were cheaper than "
        "manuscripts, so more people learned to read, scholars could share identical texts, "
        "and new ideas travelled faster than any church or court could control. Historians "
        "link it to the Reformation, the scientific revolution and the rise of newspapers.",
    ),
    ProbePrompt(
        "repetitive",
        "Repeat the following line thirty times, one per line, without numbering: "
        "The quick brown fox jumps over the lazy dog.",
    ),
)


def prompt_protocol(protocol: Protocol, prompt: ProbePrompt) -> Protocol:
    """`protocol` with `prompt`'s text, temperature and max tokens (when it names them): what a
    category is benched and probed under, so its baseline matches its probes only."""
    return replace(
        protocol,
        prompt=prompt.prompt,
        temperature=prompt.temperature,
        max_tokens=prompt.max_tokens or protocol.max_tokens,
    )


def category_protocols(protocol: Protocol, prompts: Sequence[ProbePrompt]) -> dict[str, Protocol]:
    """Each category's protocol: `prompt_protocol` of its first prompt, the one `bench
    --probe-prompts` benches (in the order the categories first appear)."""
    found: dict[str, Protocol] = {}
    for prompt in prompts:
        found.setdefault(prompt.category, prompt_protocol(protocol, prompt))
    return found


def category_of(prompt: str, prompts: Sequence[ProbePrompt] = ()) -> str | None:
    """The category of a snapshot or baseline taken with `prompt` (its protocol's prompt): that
    of the first prompt with exactly this text among `prompts` (the user's `--probe-prompts`
    file), then the built-in set, then the default prompt ("general"); None for any other text
    (a `bench --prompt` of one's own)."""
    for known in (*prompts, *BUILTIN_SET, *DEFAULT_SET):
        if known.prompt == prompt:
            return known.category
    return None


class ProbePromptsError(ValueError):
    """A prompt file that cannot be used: one line naming file:line and the field."""


def probe_prompts_setting(value: Any) -> tuple[ProbePrompt, ...]:
    """The `probe_prompts` setting: "builtin" for the built-in set, else a JSONL file's path.

    Raises:
        ValueError: Not a path, or the file is unusable (`load_probe_prompts`).
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"not a file path: {value!r}")
    if value == BUILTIN:
        return BUILTIN_SET
    return load_probe_prompts(Path(value))


def load_probe_prompts(path: Path) -> tuple[ProbePrompt, ...]:
    """Read a JSONL file of `{category, prompt, temperature?, max_tokens?}` (blank lines skipped).

    Raises:
        ProbePromptsError: Unreadable or empty, or a line that is not such an object (the
            message names file:line and the field).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProbePromptsError(f"{path}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ProbePromptsError(f"{path}: not UTF-8 text") from None
    prompts = [
        _prompt_line(f"{path}:{number}", line)
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip()
    ]
    if not prompts:
        raise ProbePromptsError(f"{path}: no prompts (one JSON object per line)")
    return tuple(prompts)


_FIELDS = ("category", "prompt", "temperature", "max_tokens")


def _prompt_line(where: str, line: str) -> ProbePrompt:
    try:
        entry = loads_json(line)
    except json.JSONDecodeError as exc:
        raise ProbePromptsError(f"{where}: not JSON ({exc.msg})") from None
    except TooDeep as exc:
        raise ProbePromptsError(f"{where}: not JSON ({exc})") from None
    if not isinstance(entry, dict):
        raise ProbePromptsError(f"{where}: not a JSON object")
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        raise ProbePromptsError(
            f"{where}: unknown field {unknown[0]!r}; known: {', '.join(_FIELDS)}"
        )
    category, prompt = entry.get("category"), entry.get("prompt")
    if not isinstance(category, str) or not category.strip():
        raise ProbePromptsError(f"{where}: category: a non-empty string is required")
    if len(category) > MAX_CATEGORY_CHARS or not category.isprintable():
        raise ProbePromptsError(
            f"{where}: category: at most {MAX_CATEGORY_CHARS} printable characters"
        )
    if not isinstance(prompt, str) or not prompt.strip():
        raise ProbePromptsError(f"{where}: prompt: a non-empty string is required")
    temperature = entry.get("temperature", 0.0)
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not math.isfinite(temperature)
        or not 0 <= temperature <= 2
    ):
        raise ProbePromptsError(f"{where}: temperature: a number from 0 to 2 is required")
    max_tokens = entry.get("max_tokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 2
    ):
        raise ProbePromptsError(f"{where}: max_tokens: a whole number of at least 2 is required")
    return ProbePrompt(category.strip(), prompt, float(temperature), max_tokens)


class Rotation:
    """Round robin over the categories, and within each over its prompts: one probe each."""

    def __init__(self, prompts: Sequence[ProbePrompt]) -> None:
        if not prompts:
            raise ValueError("a probe needs at least one prompt")
        by_category: dict[str, list[ProbePrompt]] = {}
        for prompt in prompts:
            by_category.setdefault(prompt.category, []).append(prompt)
        self.categories = tuple(by_category)
        """In the order they first appear: the order the panel and `check` list them."""
        self._by_category = by_category
        self._turn = 0

    def next(self) -> ProbePrompt:
        """The prompt of the next probe."""
        category = self.categories[self._turn % len(self.categories)]
        prompts = self._by_category[category]
        prompt = prompts[(self._turn // len(self.categories)) % len(prompts)]
        self._turn += 1
        return prompt
