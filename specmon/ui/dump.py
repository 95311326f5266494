"""`d`: the screen as it is now, into the dumps folder: an SVG (Textual's `save_screenshot`, as a
bug report or a chat shows it) and the same frame as plain text (for grep, diff and a terminal)."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.app import App

from specmon.ui.tuning.app_state import whole_frame


def dump_screen(app: App[Any], folder: Path, wall: float) -> tuple[Path, Path | None]:
    """Write the active screen to `folder` (made when missing) as SVG and text.

    Args:
        app: The running app.
        folder: The dumps folder.
        wall: The wall clock now: the files are named after it (`specmon-20261203-231502`, with
            `-2`, `-3` … when that second already has a dump).

    Returns:
        The SVG's path and the text's (None where this Textual draws no frame as text).

    Raises:
        OSError: The folder or a file could not be written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    stem = "specmon-" + time.strftime("%Y%m%d-%H%M%S", time.localtime(wall))
    name, n = stem, 1
    while (folder / f"{name}.svg").exists() or (folder / f"{name}.txt").exists():
        n += 1
        name = f"{stem}-{n}"
    text = screen_text(app)
    text_path = None
    if text is not None:
        text_path = folder / f"{name}.txt"
        text_path.write_text(text, encoding="utf-8")
    svg = Path(app.save_screenshot(f"{name}.svg", str(folder)))
    return svg, text_path


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
