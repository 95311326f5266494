"""The Textual dashboard: the only package that imports Textual or Rich (DESIGN.md §2)."""

import os

# After an ESC byte Textual waits ESCDELAY ms for the rest of an escape sequence (an arrow key,
# Alt+x) before taking it as the Esc key: 100 by default, so Esc answered in over 100 ms. A
# terminal writes a key's sequence at once, so 25 ms is plenty (tmux waits 10, Neovim 50); a
# user's own ESCDELAY wins. Set before Textual is imported: it reads the variable then.
os.environ.setdefault("ESCDELAY", "25")
