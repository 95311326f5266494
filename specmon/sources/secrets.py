"""Masking of credentials: in server args that servers echo back (SGLang returns `api_key` in
plain text) and in every command line specmon shows or saves (`shown_command`: `ab`, `launch`,
server info's launch command, and what is stored or exported from them)."""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from specmon.safe_text import MASK

__all__ = ["MASK", "is_secret_key", "mask_args", "mask_command", "mask_words", "shown_command"]

# Names whose values are credentials: server args, variables (`HF_TOKEN`, `OPENAI_API_KEY`), the
# fields of a server's printed settings (`ServerArgs(api_key='K', …)`); not `max_new_tokens`.
_SECRET_KEY = re.compile(r"(api_key|password|secret|token$|^hf_token)", re.IGNORECASE)
# `--api-key`, `--admin-api-key`, `--ssl-keyfile-password`, `--hf-token` … inside a command; a
# token only as the flag's last word, as in `_SECRET_KEY`: `--max-total-tokens`,
# `--speculative-num-draft-tokens` and `--tokenizer-path` are settings to show.
_SECRET_FLAG = re.compile(
    r"--[\w-]*(api-key|api_key|password|secret)[\w-]*|--([\w-]*[-_])?token", re.IGNORECASE
)


@functools.lru_cache(maxsize=4096)  # a server's ~450 arg names, read at every server info
def is_secret_key(name: str) -> bool:
    """Whether a server-arg name holds a credential."""
    return bool(_SECRET_KEY.search(name))


def mask_words(words: Sequence[str]) -> list[str]:
    """The words of a command with every credential replaced by `MASK`: the value after a
    secret flag (`--api-key K`, `--api-key=K`) and of a secret name (`HF_TOKEN=K`,
    `api_key='K',` in a server's printed settings)."""
    masked: list[str] = []
    after_flag = False
    for word in words:
        name, equals, _ = word.partition("=")
        if after_flag and not word.startswith("--"):
            masked.append(MASK)
        elif equals and (_SECRET_FLAG.fullmatch(name) or is_secret_key(name)):
            masked.append(f"{name}={MASK}")
        else:
            masked.append(word)
        after_flag = not equals and bool(_SECRET_FLAG.fullmatch(word))
    return masked


def shown_command(words: Sequence[str]) -> str:
    """A command as one shell line, credentials masked: the one form in which specmon shows or
    saves a command line."""
    return " ".join(
        _quote(shown, word) for shown, word in zip(mask_words(words), words, strict=True)
    )


def _quote(shown: str, word: str) -> str:
    if shown == word:
        return shlex.quote(word)
    name = shown.removesuffix(MASK)  # `--api-key=` or nothing
    return (shlex.quote(name) if name else "") + MASK  # `***` bare, not `'***'`


def mask_command(command: str) -> str:
    """`shown_command` of a command line given as text (a server's own launch command, a line
    of its log); the text unchanged when it holds no credential."""
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: words as the spaces cut them, masked the same
        words = command.split()
    return shown_command(words) if mask_words(words) != words else command


def mask_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of server args with every credential masked (None stays None: "no key")."""
    masked: dict[str, Any] = {}
    for key, value in args.items():
        if is_secret_key(key) and value not in (None, "", False):
            masked[key] = MASK
        elif isinstance(value, str) and "--" in value:
            masked[key] = mask_command(value)
        else:
            masked[key] = value
    return masked
