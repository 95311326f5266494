"""The history writer's drift check, in memory: its readings read as they came against read as
one bucket per minute (`history_store.minute_readings`), over one hour of readings kept as they
came (`history_store.RAW_S`) at a given rate.

At the dashboard's defaults (a scrape a second, a probe every ten) an hour is ~4,300 rows of the
three judged figures; the long soak (benchmarks/soak_week.py) writes them 84 times as fast, which
is what this measures by default. Prints, and writes with `--out`, the peak of Python's
allocations (tracemalloc) while each way reads the hour and judges it, and the rows read.

    python benchmarks/drift_memory.py --rate 84 --out benchmarks/results/drift-memory.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import tracemalloc
from pathlib import Path

from specmon.analysis.drift import JUDGED, drifts
from specmon.history import Figure, Point
from specmon.storage import history_store
from specmon.storage.store import Store

URL = "http://10.1.230.174:8000"
T0 = 1_750_000_020.0
HOUR_S = 3600.0
PROBE_EVERY_S = 10.0


def hour(rate: float) -> list[Point]:
    """An hour of one lifetime: the server's accept length at every scrape, the probe's two
    judged figures at every probe, `rate` times as often as the defaults."""
    scrapes, probes = int(HOUR_S * rate), int(HOUR_S * rate / PROBE_EVERY_S)
    points = [Point(URL, 5.0, T0 + i / rate, Figure.SERVER_ACCEPT, 2.2) for i in range(scrapes)]
    for i in range(probes):
        at = T0 + i * PROBE_EVERY_S / rate
        points += [
            Point(URL, 5.0, at, Figure.ACCEPT, 2.1),
            Point(URL, 5.0, at, Figure.PROBE_DECODE, 75.9),
        ]
    return points


def peak(store: Store, read: object) -> tuple[float, int]:
    """MiB at the peak of reading the hour `read`'s way and judging it; rows read."""
    tracemalloc.start()
    series = {f: read(store, URL, f, 0, T0 + 2 * HOUR_S) for f in JUDGED}  # type: ignore[operator]
    drifts(series, [])
    rows = sum(len(s) for s in series.values())
    del series
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return round(top / 2**20, 2), rows


def main() -> int:
    """Measure both ways; print and write the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=84.0, help="times the default cadences")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home, Store(Path(home) / "db") as store:
        history_store.append(store, hour(args.rate))
        raw_mib, raw_rows = peak(store, history_store.readings)
        minute_mib, minute_rows = peak(store, history_store.minute_readings)
    result = {
        "command": f"python benchmarks/drift_memory.py --rate {args.rate:g}",
        "rate": args.rate,
        "readings": {"peak_mib": raw_mib, "rows": raw_rows},
        "minute_readings": {"peak_mib": minute_mib, "rows": minute_rows},
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
