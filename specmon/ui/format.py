"""Formatting shared by the widgets: missing values are "—", never 0 (`specmon.wording`)."""

from __future__ import annotations

from textual.content import Content

from specmon.ui.columns import cut
from specmon.wording import DASH, age, num, pct

__all__ = ["DASH", "age", "cut", "escape", "fit_rows", "num", "pct"]

ELLIPSIS = "…"


def escape(text: str) -> str:
    """Text safe inside Textual content markup."""
    return text.replace("[", r"\[")


def fit_rows(markup: str, width: int, height: int, *, wrap: bool = True) -> str:
    """`markup` in a box of `width` × `height` cells, so that nothing is lost without a mark:
    its lines wrapped to `width` (or, with `wrap` off, each cut to it with "…"), and where they
    take more rows than `height`, the rows that fit, the last ending in "…" (a stale reason,
    a URL: the rest is on the `i` screen or in the events log). Horizontal cuts of plain text
    go through `cut` (ui/columns.py)."""
    if width <= 0 or height <= 0:
        return markup
    lines = Content.from_markup(markup).split("\n")
    if not wrap:
        cuts = [line if len(line.plain) <= width else _ended(line, width) for line in lines]
        if len(cuts) > height:
            cuts[height - 1 :] = [_ended(lines[height - 1], width)]
        return Content("\n").join(cuts).markup
    kept: list[Content] = []
    room = height
    for line in lines:
        rows = line.wrap(width) or [line]
        if len(rows) <= room and (len(rows) < room or line is lines[-1]):
            kept.append(line)  # whole: the widget wraps it as these rows
            room -= len(rows)
            continue
        # The line that crosses the last row: its rows that fit, the last ending in "…".
        shown = rows[:room]
        shown[-1] = _ended(shown[-1], width)
        kept.extend(shown)
        return Content("\n").join(kept).markup
    return markup


def _ended(row: Content, width: int) -> Content:
    """`row`, then "…": the mark that something follows — after a space where it fits (the row
    is whole, the next ones are not shown), else in its last cell."""
    text = row.rstrip()
    if len(text.plain) + 2 <= width:
        return text + " " + ELLIPSIS
    if len(text.plain) < width:
        return text + ELLIPSIS
    if len(text.plain) > width:
        return text.truncate(width, ellipsis=True)  # the "…" in the style of what it cuts
    return text.truncate(width - 1) + ELLIPSIS
