"""`specmon history URL --since 24h [--json]`: what the dashboard recorded of a server.

Reads the store and never creates one. The text is a table of the figures' means per step (5
minutes up to an hour back, an hour up to two days, a day beyond), the marks and any drift;
`--json` gives scripts every stored reading.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from typing import Any

from specmon.analysis.drift import JUDGED, LABELS, MIN_SPAN_S, drifts, since_last_change
from specmon.cli.common import add_db, open_store, store_setting
from specmon.history import Figure, Mark, Reading
from specmon.storage import history_store
from specmon.storage.store import Store, StoreMissing, default_db_path
from specmon.target import normalise_url
from specmon.wording import duration, num

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
JSON_SCHEMA = 1
COLUMNS = (Figure.DECODE, Figure.SERVER_ACCEPT, Figure.PROBE_DECODE, Figure.ACCEPT, Figure.CYCLE)
HEADINGS = ("server tok/s", "accept (server)", "probe tok/s", "accept (probe)", "cycle ms")


def since_seconds(text: str) -> float:
    """`--since`: a number and a unit, s, m, h or d (`90m`, `24h`, `7d`)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if match is None or float(match[1]) <= 0:
        raise argparse.ArgumentTypeError(
            f"not a span: {text!r} (a number and s, m, h or d: 30m, 24h, 7d)"
        )
    return float(match[1]) * UNITS[match[2]]


def register(commands: Any) -> None:
    """Add the `history` subcommand."""
    parser = commands.add_parser(
        "history",
        help="what the dashboard recorded of a server: figures, restarts, drift",
        description="What the dashboard recorded of a server: its figures over time, the "
        "restarts and config changes marked, and any drift. Reads the store; never creates one",
        allow_abbrev=False,
    )
    parser.add_argument("server", metavar="URL", help="the server, as the dashboard watched it")
    parser.add_argument(
        "--since",
        type=since_seconds,
        default=since_seconds("24h"),
        metavar="SPAN",
        help="how far back: 30m, 24h, 7d (default 24h)",
    )
    parser.add_argument("--json", action="store_true", help="every stored reading, as JSON")
    add_db(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, *, now: float | None = None) -> int:
    """Print the server's history since `--since` ago."""
    url = normalise_url(args.server)
    end = time.time() if now is None else now
    start = end - args.since
    try:
        store = open_store(args, create=False)
    except StoreMissing:
        if store_setting(args):
            raise
        print(f"No history: nothing recorded yet ({default_db_path()} does not exist)")
        return 0
    with store:
        if args.json:
            print(json.dumps(history_json(store, url, start, end), indent=1))
        else:
            for line in history_text(store, url, start, end):
                print(line)
    return 0


def history_json(store: Store, url: str, start: float, end: float) -> dict[str, Any]:
    """The `--json` document: every reading, the marks and the drift found."""
    series = {f: history_store.readings(store, url, f, start, end) for f in Figure}
    marks = history_store.marks(store, url, start, end)
    return {
        "schema": JSON_SCHEMA,
        "url": url,
        "since": start,
        "until": end,
        "figures": {f.value: [_reading_json(r) for r in rs] for f, rs in series.items()},
        "marks": [{"at": m.at, "kind": m.kind.value, "text": m.text} for m in marks],
        "drift": [
            {
                "figure": d.figure.value,
                "before": d.before,
                "after": d.after,
                "change": d.change,
                "z": d.z,
                "since": d.since,
                "until": d.until,
                "text": d.text(),
            }
            for d in drifts({f: series[f] for f in JUDGED}, marks)
        ],
    }


def _reading_json(r: Reading) -> dict[str, Any]:
    return {
        "at": r.at,
        "span": r.span,
        "value": r.value,
        "low": r.low,
        "high": r.high,
        "count": r.count,
        "lifetime": r.lifetime,
    }


def step_for(span: float) -> float:
    """The table's step: 5 minutes up to an hour, an hour up to two days, then a day."""
    return 300.0 if span <= 3600 else 3600.0 if span <= 2 * 86400 else 86400.0


def history_text(store: Store, url: str, start: float, end: float) -> list[str]:
    """The table, the marks and the drift, for people."""
    first = history_store.first_at(store, url)
    if first is None:
        known = history_store.targets(store)
        others = f"; recorded: {', '.join(known)}" if known else ""
        return [f"No history of {url} in {store.path}{others}"]
    step = step_for(end - start)
    count = max(1, round((end - start) / step))
    start = end - count * step
    columns = [history_store.columns(store, url, f, start, end, count) for f in COLUMNS]
    # Each row from its first reading: the range's cut (`from 06:04` over readings of 07:01 to
    # 07:04) said a time nothing was recorded at.
    firsts = history_store.column_starts(store, url, start, end, count)
    lines = [
        f"History of {url} from {_when(start)} to {_when(end)}, means per {_span(step)}",
        "  ".join(["from            ", *(f"{h:>15}" for h in HEADINGS)]),
    ]
    for row in range(count):
        values = [column[row] for column in columns]
        if all(v is None for v in values):
            continue
        cells = [
            num(v, ".1f" if f in (Figure.DECODE, Figure.PROBE_DECODE, Figure.CYCLE) else ".2f")
            for f, v in zip(COLUMNS, values, strict=True)
        ]
        earliest = firsts[row]
        label = _when(earliest if earliest is not None else start + row * step)
        lines.append("  ".join([label, *(f"{c:>15}" for c in cells)]))
    if len(lines) == 2:
        lines.append(f"no readings in this span (the history begins {_when(first)})")
    marks = history_store.marks(store, url, start, end)
    lines += [f"{_when(m.at)}  {m.kind.value}: {m.text}" for m in marks]
    series = {f: history_store.minute_readings(store, url, f, start, end) for f in JUDGED}
    found = drifts(series, marks)
    lines += [d.text() for d in found] or [_no_drift(series, marks)]
    return lines


def _no_drift(series: dict[Figure, list[Reading]], marks: list[Mark]) -> str:
    judged = [LABELS[f] for f, rs in series.items() if rs]
    if not judged:
        return "no drift: no acceptance or probe figures to judge"
    # What `drift` judges: the readings since the last change, over MIN_SPAN_S at least.
    spans = [_span_of(since_last_change(rs, marks)) for rs in series.values() if rs]
    if max(spans) < MIN_SPAN_S:
        return (
            f"too little history to judge drift: {duration(max(spans))} of this server "
            f"lifetime recorded, {duration(MIN_SPAN_S)} or more needed"
        )
    return f"no drift in {', '.join(judged)} (judged over 2 h or more of one server lifetime)"


def _span_of(readings: list[Reading]) -> float:
    return readings[-1].at + readings[-1].span - readings[0].at if readings else 0.0


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


def _span(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"
