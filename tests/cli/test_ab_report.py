"""What `specmon ab` prints of the crossover and the sweep's best, in words that agree in number."""

from __future__ import annotations

from specmon.analysis.comparison import Verdict
from specmon.analysis.load import Crossover
from specmon.cli.ab_report import crossover_line


def test_crossover_says_one_stream_and_several_streams() -> None:
    assert crossover_line(Crossover(1, 4, Verdict.WITHIN_NOISE)) == (
        "Crossover: speculation wins up to 1 stream; above that it stops paying "
        "(4 streams: within noise)."
    )
    assert crossover_line(Crossover(4, None, None)) == (
        "Crossover: speculation wins up to 4 streams, the highest load measured."
    )
    assert crossover_line(Crossover(None, 1, Verdict.LOSING)) == (
        "Crossover: speculation wins at no load measured (1 stream: losing)."
    )
