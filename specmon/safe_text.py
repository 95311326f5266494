"""Text a server sent, made safe to print, store and export: the one sanitiser.

A server specmon watches is not one it controls. Every string it supplies (model path, version,
speculative algorithm, server-arg names and values, an error body quoted in a message, a metric
label value) goes through `safe_text` where specmon reads it (`sources.backends.Connection`,
`errors.SpecmonError`) and again on the way out (the store's read path, a recording's replay,
the exports, the exporter's labels): a store written before this existed may hold anything.

What it does to a string (docs/reliability.md, "Text a server sends"):

- every control character is shown, never sent: C0 (`\\x00`–`\\x1f`: ESC, BEL, backspace, CR,
  LF, tab), DEL and C1 (`\\x7f`–`\\x9f`: the one-byte CSI, OSC, DCS) become a visible escape,
  `\\x1b`, `\\x07`, `\\x9b` (LF, CR and tab as `\\n`, `\\r`, `\\t`), so an escape sequence
  reaches the terminal as harmless printable text (`\\x1b]0;title\\x07`);
- the bidirectional overrides and isolates (U+202A–202E, U+2066–2069, U+200E, U+200F, U+061C)
  and the line and paragraph separators (U+2028, U+2029) become `\\u202e` and the like;
- a lone surrogate (a JSON `"\\ud800"`) becomes U+FFFD, as undecodable bytes do;
- a configured API key the text holds becomes `***` (`MASK`);
- text longer than the limit is cut, ending in "…".

Printable text, non-ASCII letters included, comes back unchanged (and the same object). It
imports only the model: every layer imports it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from specmon.model import ServerInfo

MASK = "***"
"""What a credential is shown as."""

LIMIT = 1000
"""Characters of one server string kept (a model path, an arg's value, an error message)."""

ELLIPSIS = "…"

NESTING = 16
"""Levels of a server's nested value kept (`safe_value`); deeper ones become `DEEP`."""

DEEP = "…(nested too deep)"

_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_MIN_SECRET = 4
"""A key shorter than this is not searched for in text (it would mask ordinary words)."""


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    named = _NAMED.get(char)
    if named is not None:
        return named
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str | bytes, *, limit: int | None = LIMIT, secrets: Iterable[str] = ()) -> str:
    """`text` safe to show on a terminal, in a file or as a label value.

    Args:
        text: What a server supplied; bytes are decoded as UTF-8, undecodable ones as U+FFFD.
        limit: The most characters kept (the last one "…" when cut); None keeps them all.
        secrets: Values to mask wherever they occur (the configured API key).

    Returns:
        One line of printable text: every control, escape and bidi character shown as an escape
        (module docstring), every secret as `MASK`.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for secret in secrets:
        if len(secret) >= _MIN_SECRET and secret in text:
            text = text.replace(secret, MASK)
    if _UNSAFE.search(text) is not None:
        text = _UNSAFE.sub(_visible, text)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + ELLIPSIS
    return text


def safe_optional(text: str | None, *, secrets: Iterable[str] = ()) -> str | None:
    """`safe_text` of a string, None kept."""
    return None if text is None else safe_text(text, secrets=secrets)


def safe_value(value: Any, *, secrets: Iterable[str] = (), depth: int = 0) -> Any:
    """A server's JSON value (an arg's) with every string in it made safe: keys and values of
    objects, items of lists; numbers, booleans and None unchanged. Levels below `NESTING`
    become `DEEP` (a server nesting 1,000 levels gets no recursion out of specmon)."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return safe_text(value, secrets=secrets)
    if isinstance(value, Mapping | list | tuple) and depth >= NESTING:
        return DEEP
    if isinstance(value, Mapping):
        return {
            safe_text(str(key), secrets=secrets): safe_value(item, secrets=secrets, depth=depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [safe_value(item, secrets=secrets, depth=depth + 1) for item in value]
    return value


def bearer_secrets(authorization: str | None) -> tuple[str, ...]:
    """The key inside an `Authorization: Bearer K` header value, as `secrets` for `safe_text`."""
    if not authorization:
        return ()
    scheme, _, token = authorization.partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else authorization.strip()
    return (token,) if token else ()


def safe_server_info(info: ServerInfo, *, secrets: Iterable[str] = ()) -> ServerInfo:
    """`info` with every string a server supplied made safe: version, model, the speculative
    algorithm, its draft model and length name, the route, every arg's name and value."""
    secrets = tuple(secrets)
    spec = info.speculative
    if spec is not None:
        spec = dataclasses.replace(
            spec,
            algorithm=safe_text(spec.algorithm, secrets=secrets),
            draft_model_path=safe_optional(spec.draft_model_path, secrets=secrets),
            length_name=safe_optional(spec.length_name, secrets=secrets),
        )
    clean = dataclasses.replace(
        info,
        version=safe_optional(info.version, secrets=secrets),
        model=safe_optional(info.model, secrets=secrets),
        speculative=spec,
        args=safe_value(info.args, secrets=secrets),
        info_route=safe_text(info.info_route, secrets=secrets),
    )
    return info if clean == info else clean  # the same object for a clean server's every read
