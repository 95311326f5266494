"""`d`: the screen as it is now, into the dumps folder: an SVG (Textual's `save_screenshot`, as a
bug report or a chat shows it) and the same frame as plain text (for grep, diff and a terminal)."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.app import App

from specmon.storage.private_files import private_dir, write_private
from specmon.ui.tuning.app_state import whole_frame


def dump_screen(app: App[Any], folder: Path, wall: float) -> tuple[Path, Path | None]:
    """Write the active screen to `folder` (made 0700 when missing) as SVG and text, each a new
    0600 file (never through a symbolic link: `private_files`).

    Args:
        app: The running app.
        folder: The dumps folder.
        wall: The wall clock now: the files are named after it (`specmon-20261203-231502`, with
            `-2`, `-3` … when that second already has a dump).

    Returns:
        The SVG's path and the text's (None where this Textual draws no frame as text).

    Raises:
        OSError: The folder or a file could not be written (a full disk: what was written of
            that file stays, the error says why).
    """
    private_dir(folder)
    stem = "specmon-" + time.strftime("%Y%m%d-%H%M%S", time.localtime(wall))
    text = screen_text(app)
    svg = app.export_screenshot()
    for n in range(1, 1000):
        name = stem if n == 1 else f"{stem}-{n}"
        # lexists: a link (even a dangling one) under the name takes it too; and each file is
        # opened new (O_EXCL, O_NOFOLLOW), so a name taken meanwhile is refused, not written.
        if any(os.path.lexists(folder / f"{name}.{ext}") for ext in ("svg", "txt")):
            continue
        try:
            svg_path = _write_new(folder / f"{name}.svg", svg)
        except FileExistsError:
            continue
        text_path = None
        if text is not None:
            text_path = _write_new(folder / f"{name}.txt", text)
        return svg_path, text_path
    raise FileExistsError(f"{folder} has no free name for {stem}")


def _write_new(path: Path, text: str) -> Path:
    write_private(path, text, new=True)
    return path


def screen_text(app: App[Any]) -> str | None:
    """The frame on screen as plain text, one line a row, trailing blanks dropped: what
    `export_screenshot` renders for its SVG, exported as text instead (None: see `whole_frame`)."""
    frame = whole_frame(app)
    if frame is None:
        return None
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(frame)
    lines = console.export_text(styles=False).splitlines()
    return "\n".join(line.rstrip() for line in lines).rstrip("\n") + "\n"
