"""The one sanitiser of server-supplied text (`specmon.safe_text`): what it shows of controls,
escapes and bidi overrides, what it keeps, the key it masks and where it cuts."""

from __future__ import annotations

import dataclasses
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from specmon.model import ServerInfo, SpecConfig
from specmon.safe_text import (
    DEEP,
    LIMIT,
    MASK,
    NESTING,
    bearer_secrets,
    safe_server_info,
    safe_text,
    safe_value,
)

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# What a hostile model name held in the review: a pane title (OSC 0, ended by BEL), a hyperlink
# (OSC 8, ended by ST), a clear-screen (CSI 2J), the one-byte CSI, Rich markup.
EVIL = (
    "\x1b]0;PWNED\x07m\x1b]8;;http://x.example/\x1b\\link\x1b]8;;\x1b\\\x1b[2J\x9b31m"
    "[red]x[/red]\b\r\u202egnp.exe"
)


def _unsafe(char: str) -> bool:
    """A character no sanitised text may hold: a C0 or C1 control, DEL, a bidi control, a line
    or paragraph separator, a lone surrogate."""
    return (
        unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp")
        or char in BIDI
        or 0x80 <= ord(char) <= 0x9F
    )


@given(st.text(max_size=LIMIT + 50))
@example(EVIL)
@example("\ud800 lone surrogate")
def test_no_control_escape_or_bidi_character_survives(text: str) -> None:
    safe = safe_text(text)
    assert not any(_unsafe(c) for c in safe)
    assert "\x1b" not in safe and "\x07" not in safe
    assert len(safe) <= LIMIT
    safe.encode("utf-8")  # printable to any UTF-8 terminal: no lone surrogate left


@given(st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=LIMIT))
@example("meta-llama/Llama-3.3-70B-Instruct")
@example("Qwen/Qwen3-235B-A22B · 模型 · ü [red]x[/red] \\x1b")
def test_printable_text_comes_back_unchanged(text: str) -> None:
    text = "".join(c for c in text if not _unsafe(c))
    assert safe_text(text) == text


def test_controls_are_shown_as_escapes_not_sent() -> None:
    assert safe_text(EVIL) == (
        "\\x1b]0;PWNED\\x07m\\x1b]8;;http://x.example/\\x1b\\link\\x1b]8;;\\x1b\\\\x1b[2J"
        "\\x9b31m[red]x[/red]\\x08\\r\\u202egnp.exe"
    )
    assert safe_text("a\tb\nc\x7f") == "a\\tb\\nc\\x7f"
    assert safe_text("\u2028\u2066") == "\\u2028\\u2066"


def test_bytes_are_decoded_with_replacement() -> None:
    assert safe_text(b"model-\xff\xfe-\x1b[2J") == "model-\ufffd\ufffd-\\x1b[2J"


def test_long_text_is_cut_with_an_ellipsis() -> None:
    cut = safe_text("m" * (LIMIT + 1))
    assert len(cut) == LIMIT and cut.endswith("…")
    assert safe_text("m" * LIMIT) == "m" * LIMIT
    assert safe_text("abcdef", limit=4) == "abc…"
    assert safe_text("m" * (LIMIT + 1), limit=None) == "m" * (LIMIT + 1)


def test_the_key_is_masked_wherever_it_is() -> None:
    key = "sk-specmon-SECRET-4f9c2e7a"
    assert safe_text(f"/models/{key}/llama", secrets=[key]) == f"/models/{MASK}/llama"
    assert safe_text(f"\x1b{key}", secrets=[key]) == f"\\x1b{MASK}"
    # A key of a few characters would mask ordinary words: it is not searched for.
    assert safe_text("meta-llama", secrets=["a"]) == "meta-llama"
    assert bearer_secrets(f"Bearer {key}") == (key,)
    assert bearer_secrets(None) == () and bearer_secrets("Bearer ") == ()


def test_nested_values_are_safe_and_bounded() -> None:
    value = {"\x1bk": ["\x07", 1, 2.5, None, True, {"x": "\x9b"}]}
    assert safe_value(value) == {"\\x1bk": ["\\x07", 1, 2.5, None, True, {"x": "\\x9b"}]}
    deep: object = "leaf"
    for _ in range(1000):  # no recursion error, however deep a server nests
        deep = [deep]
    kept = safe_value(deep)
    for _ in range(NESTING):
        (kept,) = kept
    assert kept == DEEP


def _info(text: str) -> ServerInfo:
    return ServerInfo(
        backend="sglang",
        version=text,
        model=text,
        tp_size=1,
        dp_size=None,
        pp_size=None,
        speculative=SpecConfig(
            algorithm=text, num_steps=2, eagle_topk=1, num_draft_tokens=3, draft_model_path=text
        ),
        stream_interval=None,
        cuda_graph_disabled=None,
        cuda_graph_max_bs=None,
        metrics_enabled=True,
        args={"model_path": text, text: [text]},
    )


def test_every_string_of_server_info_is_made_safe() -> None:
    key = "sk-specmon-SECRET-4f9c2e7a"
    safe = safe_server_info(_info(EVIL + key), secrets=[key])
    shown = safe_text(EVIL) + MASK
    assert safe.version == safe.model == shown
    assert safe.speculative is not None
    assert safe.speculative.algorithm == safe.speculative.draft_model_path == shown
    assert safe.args == {"model_path": shown, shown: [shown]}
    clean = _info("meta-llama/Llama-3.3-70B-Instruct")
    assert safe_server_info(clean) is clean  # a clean server's info is kept as it is


@pytest.mark.parametrize("field", ["version", "model"])
def test_none_stays_none(field: str) -> None:
    info = dataclasses.replace(_info("x"), **{field: None})
    assert getattr(safe_server_info(info), field) is None
