"""Which table columns fit a width, and how wide each is: essentials always, the rest by rank.

A DataTable wider than its screen hides its right-hand columns behind → presses; here the
columns are chosen for the width instead, and long essential cells are cut (with "…") so that
every essential column stays in view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CELL_PADDING = 2  # a DataTable cell's padding, one each side


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its label, whether it must show, and how far it may shrink."""

    key: str
    label: str
    essential: bool = False
    min_width: int = 0
    """Essential columns are cut down to this (never below the label). Others show whole, or,
    with a min_width, cut to the room left when that is at least this."""
    preferred: int = 0
    """Essential columns grow to this (or their natural width, if less) before optional ones
    join; 0: their natural width."""
    rank: int = 0
    """Optional columns join in rank order (lowest first) while they fit."""


def fit(columns: Sequence[Column], cells: Sequence[Sequence[str]], available: int) -> list[int]:
    """Each column's width for a table `available` cells wide; 0 leaves a column out.

    Args:
        columns: The columns, in table order.
        cells: The rows' texts, one per column.
        available: The table's width.
    """
    natural = [max([len(c.label), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    widths = [0] * len(columns)
    for i, column in enumerate(columns):
        if column.essential:
            widths[i] = min(natural[i], max(len(column.label), column.min_width))

    def used() -> int:
        return sum(w + CELL_PADDING for w in widths if w)

    def grow(i: int, to: int) -> None:
        widths[i] += max(0, min(to - widths[i], available - used()))

    # A cell at a time, in turn: a long config does not starve the validity beside it.
    targets = {
        i: min(natural[i], c.preferred or natural[i]) for i, c in enumerate(columns) if c.essential
    }
    while used() < available and (short := [i for i, t in targets.items() if widths[i] < t]):
        for i in short:
            grow(i, widths[i] + 1)
    optional = sorted(
        (i for i, c in enumerate(columns) if not c.essential), key=lambda i: columns[i].rank
    )
    for i in optional:
        if used() + natural[i] + CELL_PADDING <= available:
            widths[i] = natural[i]
    for i, column in enumerate(columns):  # what is left widens the cut essentials
        if column.essential:
            grow(i, natural[i])
    for i in optional:  # and then goes to an optional column that may be cut
        room = available - used() - CELL_PADDING
        least = max(columns[i].min_width, len(columns[i].label))
        if not widths[i] and columns[i].min_width and room >= least:
            widths[i] = room
    return widths


def cut(text: str, width: int) -> str:
    """`text` in `width` cells, ending in "…" when it was longer."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def cut_middle(text: str, width: int) -> str:
    """`text` in `width` cells, its middle replaced by "…" when it was longer: the end (a port,
    the last figures of an address, a box's number) tells servers apart, so it keeps two thirds.
    """
    if len(text) <= width:
        return text
    head = max(0, width - 1) // 3
    return text[:head] + "…" + text[len(text) - (max(0, width - 1) - head) :]
