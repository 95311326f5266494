"""The words and numbers every surface prints (specmon/wording.py)."""

from __future__ import annotations

from specmon.analysis.comparison import Speedup
from specmon.wording import pct, speedup_text


def test_a_speedup_that_rounds_to_zero_has_no_minus_sign() -> None:
    # A plain server against its own baseline: -0.0% read as a (tiny) loss.
    assert pct(-0.00001, signed=True) == "+0.0%"
    assert pct(-0.0006, signed=True) == "-0.1%"
    assert speedup_text(Speedup(-0.00001, -0.0002, 0.0002)) == "+0.0% [+0.0%, +0.0%]"
    assert speedup_text(Speedup(0.214, 0.075, 0.371)) == "+21.4% [+7.5%, +37.1%]"
    assert pct(0.46) == "46%"
