"""Esc acts after 10 ms, not Textual's 100.

After an ESC byte Textual waits `ESCAPE_DELAY` (the `ESCDELAY` variable, in ms; 100 by default)
for the rest of an escape sequence (an arrow key, Alt+x) before taking it as the Esc key, so Esc
answered in over 100 ms. A terminal writes a key's sequence in one write, and SSH carries it in
one packet, so 10 ms is enough: tmux's own default escape-time since 3.5 (Neovim waits 50).
Every dialog closes on Esc, so this wait is in each of them. A user's own ESCDELAY wins.
Textual reads the variable once, into `textual.constants.ESCAPE_DELAY`, which its parser reads
at each ESC (`constants.ESCAPE_DELAY`): that constant is what this sets.
"""

from __future__ import annotations

import inspect
import os

from textual import constants
from textual._xterm_parser import XTermParser

from specmon.ui.tuning import Mismatch

DELAY_S = 0.010
PRIVATE_NAMES = ("textual._xterm_parser",)
"""The module whose source is checked for its read of the constant."""


def check() -> None:
    """Textual's constant exists, a number of seconds, read by the parser at each ESC."""
    if not isinstance(constants.ESCAPE_DELAY, float):
        raise Mismatch("textual.constants.ESCAPE_DELAY is not a float")
    if "constants.ESCAPE_DELAY" not in inspect.getsource(XTermParser):
        raise Mismatch("Textual's XTermParser no longer reads constants.ESCAPE_DELAY")


def apply() -> None:
    """10 ms, unless the user set ESCDELAY."""
    if "ESCDELAY" not in os.environ:
        constants.ESCAPE_DELAY = DELAY_S  # type: ignore[misc]
