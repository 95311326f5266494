"""The metrics window finds the pair of scrapes a figure spans by bisection: the same pair as
walking back from the newest scrape, on any mix of scrapes with and without the figure."""

from __future__ import annotations

import random

import pytest

from specmon.model import ServerMetrics
from specmon.session.window import MetricsWindow


def _walked(scrapes: list[tuple[float, ServerMetrics]], span: float) -> tuple[float, float] | None:
    """The definition (window.py's docstring): from the newest scrape carrying the figure back,
    to the newest carrying one from before the span, else the oldest carrying one."""
    carrying = [(t, m) for t, m in scrapes if m.spec_drafts_total is not None]
    if len(carrying) < 2:
        return None
    t1 = carrying[-1][0]
    start = None
    for t, _ in reversed(carrying[:-1]):
        start = t
        if t < t1 - span:
            break
    assert start is not None
    return (start, t1) if t1 > start else None


@pytest.mark.parametrize("seed", range(40))
def test_the_pair_is_the_one_a_walk_back_finds(seed: int) -> None:
    rng = random.Random(seed)
    window = MetricsWindow(span=rng.choice([5.0, 30.0, 60.0]))
    t, drafts = 0.0, 0.0
    appears = rng.uniform(0, 80)  # a family that appears mid-run (SGLang's labelled ones)
    for _ in range(rng.randint(1, 400)):
        t += rng.choice([0.0, 0.05, 0.3, 1.0, rng.uniform(0, 5)])
        drafts += rng.uniform(0, 10)
        carries = t >= appears and rng.random() > 0.2
        window.add(t, ServerMetrics(spec_drafts_total=drafts if carries else None))
        scrapes = list(window._scrapes)
        for span in (0.0, 1.0, 10.0, 60.0):
            pair = window._pair(span, lambda m: m.spec_drafts_total)
            found = None if pair is None else (pair[0], pair[2])
            assert found == _walked(scrapes, span)
