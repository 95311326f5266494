"""Files only their owner can read, whatever the umask: the store, exports, recordings, dumps,
servers' logs, crash reports and unsaved results. They hold a private deployment's figures, and a
server's log can hold its own key (SGLang prints its args at start).

Every file specmon writes is opened here, and never through a symbolic link (`O_NOFOLLOW`): a
link planted under a name specmon writes (a dump's predictable name, an `--out` path in a shared
folder) would otherwise have it truncate, chmod and fill another file. A new file is opened with
`O_EXCL` too, so a name taken meanwhile is refused rather than written through.
"""

from __future__ import annotations

import errno
import os
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
# How each mode opens: `w` empties the file, `a` appends, `x` refuses one that exists.
_FLAGS = {"w": os.O_TRUNC, "a": os.O_APPEND, "x": os.O_EXCL}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

LINK_REFUSED = "it is a symbolic link: specmon does not write through one (give the real path)"
"""The `strerror` of the OSError for a path that is a link."""


def open_private(path: Path, mode: str = "w", **options: Any) -> IO[Any]:
    """`path` opened for writing (`mode`: w, a or x, with b for bytes), created 0600; a file
    already there is made 0600 too. `options` go to `open` (encoding, …).

    Raises:
        OSError: It cannot be opened; a symbolic link (dangling or not) is refused with
            `LINK_REFUSED` as its `strerror`, `x` refuses any name that exists (FileExistsError).
    """
    flags = os.O_WRONLY | os.O_CREAT | _FLAGS[mode[0]] | _NOFOLLOW
    try:
        fd = os.open(path, flags, PRIVATE_FILE)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EEXIST and path.is_symlink()):
            raise OSError(errno.ELOOP, LINK_REFUSED, str(path)) from None
        raise
    try:
        os.fchmod(fd, PRIVATE_FILE)  # os.open's mode passes through the umask; this does not
        return os.fdopen(fd, mode.replace("x", "w"), **options)
    except BaseException:
        os.close(fd)
        raise


def write_private(path: Path, text: str, *, new: bool = False) -> None:
    """`text` (UTF-8) as the whole of `path`, 0600 (`new`: refuse a file already there).

    Raises:
        OSError: As `open_private`; or the write failed (a full disk), and the file holds what
            was written before it.
    """
    file = open_private(path, "x" if new else "w", encoding="utf-8")
    try:
        file.write(text)
        file.flush()
    except BaseException:
        close_quietly(file)
        raise
    file.close()


def close_quietly(file: IO[Any]) -> None:
    """Close `file`, ignoring an error of the flush that comes with it: for a file whose write
    already failed (the disk full), whose error is the one worth reporting."""
    with suppress(OSError, ValueError):  # the flush failed again; the descriptor is closed
        file.close()


def private_dir(path: Path) -> Path:
    """`path` as a folder, made 0700 if this makes it (its parents as the umask says)."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    return path
