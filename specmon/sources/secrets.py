"""Masking of secrets that servers echo back (SGLang returns `api_key` in plain text)."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

# Server-arg names whose values are credentials.
_SECRET_KEY = re.compile(r"(api_key|password|secret|token$|^hf_token)", re.IGNORECASE)
# `--api-key X`, `--admin-api-key=X`, `--ssl-keyfile-password X` … inside a launch command.
_SECRET_FLAG = re.compile(
    r"(--[\w-]*(?:api-key|api_key|password|secret|token)[\w-]*)(=|\s+)(\"[^\"]*\"|'[^']*'|\S+)",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=4096)  # a server's ~450 arg names, read at every server info
def is_secret_key(name: str) -> bool:
    """Whether a server-arg name holds a credential."""
    return bool(_SECRET_KEY.search(name))


def mask_command(command: str) -> str:
    """Replace the value of every secret-bearing flag in a command line."""
    return _SECRET_FLAG.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", command)


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
