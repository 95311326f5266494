"""The Textual dashboard: the only package that imports Textual or Rich (DESIGN.md §2)."""

import os

# After an ESC byte Textual waits ESCDELAY ms for the rest of an escape sequence (an arrow key,
# Alt+x) before taking it as the Esc key: 100 by default, so Esc answered in over 100 ms. A
# terminal writes a key's sequence in one write, and SSH carries it in one packet, so 10 ms is
# enough: tmux's own default escape-time since 3.5 (Neovim waits 50). Every dialog closes on
# Esc, so this wait is in each of them. A user's own ESCDELAY wins. Set before Textual is
# imported: it reads the variable then.
os.environ.setdefault("ESCDELAY", "10")
