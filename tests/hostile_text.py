"""What a hostile server says of itself, for the escape-injection tests: a model name that
attacks the terminal, a server that echoes the API key in it, and how to find what must never
reach a terminal."""

from __future__ import annotations

from dataclasses import replace

from fault_cases import FAST

KEY = "sk-specmon-SECRET-4f9c2e7a"
# OSC 0 (the tmux pane's title, ended by BEL), OSC 8 (a hyperlink, ended by ST), CSI 2J (clear
# the screen), a bell, the one-byte C1 CSI, a right-to-left override, Rich markup and a link.
EVIL = (
    "\x1b]0;PWNED\x07evil\x1b]8;;http://x.example/\x1b\\link\x1b]8;;\x1b\\\x1b[2J\x07"
    "\x9b31m\u202e[red]x[/red][link=http://x.example]y[/link]"
)
MARKUP = "[red]x[/red][link=http://x.example]y[/link]"
"""The end of `EVIL`: Rich markup, to be shown as text."""
CRAFTED = replace(
    FAST,
    model_path=f"/models/{KEY}/{EVIL}",
    served_model_name=EVIL,
    speculative_draft_model_path=EVIL,
    api_key=KEY,
)
"""A simulated server named `EVIL`, holding the key in its model path, asking for the key."""


def raw_controls(text: str) -> list[str]:
    """What a server's text must never put on a terminal: C0 controls but LF, DEL, C1, the bidi
    overrides and isolates."""
    return [
        c
        for c in text
        if (ord(c) < 0x20 and c != "\n")
        or 0x7F <= ord(c) <= 0x9F
        or "\u202a" <= c <= "\u202e"
        or "\u2066" <= c <= "\u2069"
    ]
