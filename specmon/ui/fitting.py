"""Which optional parts of a line to leave out so that it fits, in a fixed order."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def left_out(order: Sequence[str], fits: Callable[[frozenset[str]], bool]) -> frozenset[str]:
    """The parts of `order` to leave out for `fits(left_out)` to hold.

    They go in `order` until it fits (all of them if it never does); then, the most useful first
    (the last to go), each comes back if it still fits without it: a long part that had to go
    does not take a short one with it.
    """
    out: list[str] = []
    for name in order:
        if fits(frozenset(out)):
            break
        out.append(name)
    for name in reversed(out[:-1]):
        if fits(frozenset(out) - {name}):
            out.remove(name)
    return frozenset(out)
