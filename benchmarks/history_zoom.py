"""The lasting history at its bounds: a day written at an accelerated rate, the store's size, and
(`--keys`) the zoom key's time through a pty.

    python benchmarks/history_zoom.py --hours 24 --out benchmarks/results/history-YYYY-MM-DD.json
    python benchmarks/history_zoom.py --hours 24 --keys 10 --launches 5

The day is written as the dashboard's writer writes it (`history_store.append` every 5 s of
simulated time, `history_store.maintain` every simulated minute) for one server at the default
cadences: a sample a second (the server's tok/s and accept length) and a probe every 10 s (its
decode tok/s, accept length and cycle), with a restart mark every 6 hours. Prints the store's
file size and pages in use, and the time each batch and each maintenance took (medians, p95).

With `--keys N` the day is written for a simulated server (keys_pty.py's pair), the real
`specmon` opens on it in a 160x50 pty with that store (history on) and `z` is pressed through
its four spans N times: each press timed from the write of the key to the screen showing the
span's sparkline caption ("all requests, 24 h"), drawn from the read span. `--launches` times
the first frame with the day in the store, alternately with the history on and `--no-history`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from specmon.history import Figure, Mark, MarkKind, Point
from specmon.storage import history_store
from specmon.storage.history_store import Limits
from specmon.storage.store import Store

URL = "http://127.0.0.1:30000"
FLUSH_S = 5
MAINTAIN_S = 60
PROBE_EVERY_S = 10


def write_history(
    path: Path, hours: float, end: float, seed: int = 0, url: str = URL
) -> dict[str, list[float]]:
    """Write `hours` of one server's history ending at `end` into the store at `path`.

    Returns:
        The seconds each batch write and each maintenance took.
    """
    rng = random.Random(seed)
    start = end - hours * 3600
    times: dict[str, list[float]] = {"append_s": [], "maintain_s": []}
    with Store(path) as store:
        t = start
        while t < end:
            points: list[Point] = []
            marks: list[Mark] = []
            for second in range(FLUSH_S):
                at = t + second
                points.append(Point(url, None, at, Figure.DECODE, rng.gauss(70, 5)))
                points.append(Point(url, None, at, Figure.SERVER_ACCEPT, rng.gauss(2.5, 0.1)))
                if int(at) % PROBE_EVERY_S == 0:
                    points += [
                        Point(url, None, at, Figure.PROBE_DECODE, rng.gauss(76, 3)),
                        Point(url, None, at, Figure.ACCEPT, rng.gauss(2.6, 0.3)),
                        Point(url, None, at, Figure.CYCLE, rng.gauss(30, 2)),
                    ]
                if int(at - start) % (6 * 3600) == 0:
                    marks.append(Mark(url, at, MarkKind.RESTART, "server restarted"))
            began = time.perf_counter()
            history_store.append(store, points, marks)
            times["append_s"].append(time.perf_counter() - began)
            t += FLUSH_S
            if int(t - start) % MAINTAIN_S == 0:
                began = time.perf_counter()
                history_store.maintain(store, t, Limits())
                times["maintain_s"].append(time.perf_counter() - began)
    return times


ZOOMS = ("1 h", "24 h", "all", "5 min")


def time_zoom_keys(hours: float, presses: int, launches: int) -> dict[str, list[float]]:
    """Seconds of each `z` press (by the span it shows) and of each first frame."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import keys_pty as k

    sys.setswitchinterval(0.001)  # as keys_pty: the reader stamps reads within 1 ms
    results = k.Results()
    config = k.Config((160, 50), "healthy")
    steps = tuple(
        k.Step("z", f"z ({label})", b"z", k.shows(f"all requests, {label}")) for label in ZOOMS
    )
    rng = random.Random(28)
    with (
        tempfile.TemporaryDirectory(prefix="history-zoom-") as home,
        k.servers("healthy") as (url, base),
    ):
        db = Path(home) / "specmon.db"
        write_history(db, hours, time.time(), url=url)
        argv = [*k.specmon_argv(), "--url", url, "--baseline-url", base, "--db", str(db)]
        without = k.Results()
        k.launch(argv, config, home, k.Results()).quit()  # writes the bytecode cache: not timed
        for launch_no in range(max(1, launches)):
            # Alternately with the history on and off: the same machine's load for both.
            for off, into in ((False, results), (True, without)):
                term = k.launch(argv + ["--no-history"] * off, config, home, into)
                try:
                    if launch_no == 0 and not off:
                        term.idle(2.0)
                        k.press_rounds(term, presses, rng, results, steps)
                    else:
                        term.idle(rng.uniform(0.3, 0.8))
                    term.quit()
                except BaseException:
                    term.kill()
                    raise
    return {
        **results.keys,
        "first frame (history on)": results.first_frame,
        "first frame (--no-history)": without.first_frame,
    }


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"median {1000 * statistics.median(ordered):.2f} ms, p95 {1000 * p95:.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--db", type=Path, help="the store to write (default: a new temporary one)")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    parser.add_argument("--keys", type=int, metavar="N", help="time z through the pty, N rounds")
    parser.add_argument("--launches", type=int, default=3, help="with --keys: first frames")
    args = parser.parse_args()
    if args.keys:
        timed = time_zoom_keys(args.hours, args.keys, args.launches)
        for label, samples in timed.items():
            print(f"{label}: {_ms(samples)}, max {1000 * max(samples):.0f} ms (n={len(samples)})")
        if args.out:
            args.out.write_text(json.dumps(timed, indent=1))
        return 0
    db = args.db or Path(f"/tmp/specmon-history-{int(time.time())}.db")
    if db.exists():
        sys.exit(f"{db} exists: give a new path")
    began = time.perf_counter()
    times = write_history(db, args.hours, time.time())
    wall = time.perf_counter() - began
    with Store(db, create=False) as store:
        used = history_store.used_bytes(store)
        rows = store.read("SELECT span > 0, COUNT(*) FROM history GROUP BY span > 0")
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    figures = {
        "hours": args.hours,
        "db": str(db),
        "file_bytes": size,
        "used_bytes": used,
        "rows": {"raw" if not bucket else "buckets": n for bucket, n in rows},
        "write_s": wall,
        **times,
    }
    print(f"{args.hours:g} h written in {wall:.1f} s into {db}")
    print(
        f"store: {size / 1e6:.2f} MB on disk (with -wal), {used / 1e6:.2f} MB of pages in use;"
        f" rows {figures['rows']}"
    )
    print(f"each 5-s batch: {_ms(times['append_s'])}; each maintenance: {_ms(times['maintain_s'])}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
