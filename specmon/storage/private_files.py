"""Files only their owner can read, whatever the umask: the store, exports, servers' logs and
crash reports. They hold a private deployment's figures, and a server's log can hold its own
key (SGLang prints its args at start)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
# How each mode opens: `w` empties the file, `a` appends, `x` refuses one that exists.
_FLAGS = {"w": os.O_TRUNC, "a": os.O_APPEND, "x": os.O_EXCL}


def open_private(path: Path, mode: str = "w", **options: Any) -> IO[Any]:
    """`path` opened for writing (`mode`: w, a or x, with b for bytes), created 0600; a file
    already there is made 0600 too. `options` go to `open` (encoding, …)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | _FLAGS[mode[0]], PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)  # os.open's mode passes through the umask; this does not
        return os.fdopen(fd, mode.replace("x", "w"), **options)
    except BaseException:
        os.close(fd)
        raise


def write_private(path: Path, text: str) -> None:
    """`text` (UTF-8) as the whole of `path`, 0600."""
    with open_private(path, "w", encoding="utf-8") as file:
        file.write(text)


def private_dir(path: Path) -> Path:
    """`path` as a folder, made 0700 if this makes it (its parents as the umask says)."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    return path
