"""The highlighted row's history under the fleet table (`specmon --prometheus`): one line per
figure the row shows, a sparkline of the last 15 minutes filling from the right, with the value
now, the lowest and the highest over the span.

    speedup ▁▂▃▅▆▇▇█ +12.0% [+8.1%, +15.9%] · 15 min: -3.0% to +18.2%
    tok/s   ▅▅▆▆▇▇▇▇ 152.3 · 15 min: 140.1 to 160.4
    accept  ▃▃▄▄▄▅▅▅ 2.91 · 15 min: 2.80 to 3.02

The points are the session's (`session.prometheus_fleet.RowHistory`, one range query); the bars
are the dashboard's sparkline (`widgets.history_spark.bar_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence

from specmon.analysis.catalogue import Figure
from specmon.analysis.comparison import Speedup
from specmon.session.prometheus_fleet import HISTORY_FIGURES, RowHistory
from specmon.ui.columns import cut, cut_middle
from specmon.ui.widgets.history_spark import bar_rows
from specmon.wording import speedup_text

LABELS = {"speedup": "speedup", "decode tok/s": "tok/s", "accept length": "accept"}
"""Each figure's name on its line, as the table's column heads it."""
LABEL_WIDTH = 8
TEXT_ROOM = 52
"""Cells kept right of the sparkline for the value now and the span's range."""


def spark_cells(width: int) -> int:
    """Cells of the sparkline on a line `width` wide: what the label and the text leave, 10 to
    60 (the points asked of Prometheus: one a cell)."""
    return max(10, min(60, width - LABEL_WIDTH - TEXT_ROOM))


def history_lines(history: RowHistory, width: int) -> list[str]:
    """A line per figure of `HISTORY_FIGURES` Prometheus holds points of, each cut to `width`;
    the one-line error (or that it holds none) instead when there are none."""
    if history.error is not None:
        return [cut_middle(history.error, width)]  # where it failed and how: both ends
    minutes = f"{(history.end - history.start) / 60:g} min"
    cells = spark_cells(width)
    lines = []
    for figure in HISTORY_FIGURES:
        points = history.points.get(figure.key)
        if not points:
            continue
        values = [v for _, v in points]
        spark = _spark(points, history.start, history.end, cells)
        now = _now(figure, history, points[-1])
        low, high = (figure.value_text(v, unit=False) for v in (min(values), max(values)))
        text = f"{LABELS[figure.key]:<{LABEL_WIDTH}}{spark} {now} · {minutes}: {low} to {high}"
        lines.append(cut(text, width))
    return lines


def _now(figure: Figure, history: RowHistory, latest: tuple[float, float]) -> str:
    """The latest value; the speedup with its interval of the same instant, as the dashboard
    writes it."""
    when, value = latest
    if figure.key != "speedup":
        return figure.value_text(value, unit=False)
    low, high = (
        dict(history.points.get(end, ())).get(when) for end in ("speedup low", "speedup high")
    )
    return speedup_text(Speedup(value, low, high)) or figure.value_text(value, unit=False)


def _spark(points: Sequence[tuple[float, float]], start: float, end: float, cells: int) -> str:
    """`cells` wide: each cell the latest point of its share of the span, from the first cell
    that has one (blank before: the history fills from the right); a cell without a point
    after it keeps the one before; a point outside the span is left out."""
    extent = max(end - start, 1e-9)
    slots: list[float | None] = [None] * cells
    for when, value in points:
        if start <= when <= end:
            slots[min(cells - 1, int((when - start) / extent * cells))] = value
    first = next((i for i, v in enumerate(slots) if v is not None), cells)
    if first == cells:  # none within the span
        return " " * cells
    values: list[float] = []
    for slot in slots[first:]:
        values.append(slot if slot is not None else values[-1])
    low = min(values)  # raised above zero: a losing speedup's line is drawn too
    return " " * first + bar_rows([v - low + 1 for v in values], len(values), 1)[0]
