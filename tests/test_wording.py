"""The words and numbers every surface prints (specmon/wording.py)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from specmon.analysis.comparison import Speedup
from specmon.wording import interval_text, pct, speedup_text


def test_a_speedup_that_rounds_to_zero_has_no_minus_sign() -> None:
    # A plain server against its own baseline: -0.0% read as a (tiny) loss.
    assert pct(-0.00001, signed=True) == "+0.0%"
    assert pct(-0.0006, signed=True) == "-0.1%"
    # To the decimal that tells the interval's ends from the value: "+0.0% [+0.0%, +0.0%]" and
    # "+0.0% [-0.1%, +0.0%]" read as no interval, or one that leaves out its own value.
    assert speedup_text(Speedup(-0.00001, -0.0002, 0.0002)) == "+0.00% [-0.02%, +0.02%]"
    assert speedup_text(Speedup(-0.0002, -0.0009, 0.0004)) == "-0.02% [-0.09%, +0.04%]"
    assert speedup_text(Speedup(0.00001, 0.000004, 0.000016)) == "+0.001% [+0.000%, +0.002%]"
    assert interval_text(Speedup(-0.0002, -0.0009, 0.0004)) == "[-0.09%, +0.04%]"
    assert speedup_text(Speedup(0.0, 0.0, 0.0)) == "+0.0% [+0.0%, +0.0%]"  # no spread at all
    assert speedup_text(Speedup(0.214, 0.075, 0.371)) == "+21.4% [+7.5%, +37.1%]"
    assert pct(0.46) == "46%"


@given(
    value=st.floats(-0.5, 2.0),
    below=st.floats(0.0, 0.3),
    above=st.floats(0.0, 0.3),
)
def test_a_speedup_never_reads_outside_its_interval(
    value: float, below: float, above: float
) -> None:
    text = speedup_text(Speedup(value, value - below, value + above))
    assert text is not None
    shown, low, high = (float(n) for n in re.findall(r"[-+]\d+\.\d+", text))
    assert low <= shown <= high
    if below >= 0.00001:  # an end that differs shows differently, to three decimals at most
        assert low < shown
    assert not re.search(r"-0\.0+%", text)  # a zero is never signed as a loss
