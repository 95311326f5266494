"""The long soak: a week of scrapes and probes, at their default rates, in two hours or more.

The real dashboard runs in a real pty (160x50, Textual's own driver as a user gets it, with every
tuning of specmon/ui/tuning installed), watching a speculative simulator and its plain twin (a
child process, `soak.Simulators`). Its rates are a week's squeezed into `--hours`: a /metrics
sample every second and a probe every ten seconds for `--days` days. Meanwhile the faults of
docs/reliability.md come and go (`soak.FAULTS`, each `--fault-s` in turn, then as long without),
the server restarts every `--restart-every` seconds, a baseline is taken every `--baseline-every`
seconds, and every screen is opened and closed through the pty (keys_pty.py's round). At the
start and at the end, keys_pty.py's round is timed through the pty (write of the key to the read
that shows its result, parsed by pyte): the dashboard after a week answers as it did fresh, or
not. Every `--sample-every` seconds: the dashboard's RSS and the objects its garbage collector
tracks (`soak.tracked_objects`), both written by the dashboard itself, whose trends
`soak_trend.trend` judges. `--out` is written once the start's round is timed, at every restart
and at the end: a run cut short still leaves its figures so far ("finished": false).

    python benchmarks/soak_week.py --hours 2 --out benchmarks/results/soak-week.json

Needs pyte (`pip install -e '.[bench]'`). Prints and writes one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from keys_pty import ESC, PANELS, ROUND, Results, Term, Timeout, press_rounds, summary
from soak import (
    FAULTS,
    OBJECTS_FLAT_WITHIN,
    RSS_FLAT_WITHIN,
    Simulators,
    cache_fill,
    live_memory,
)
from soak_trend import trend

import specmon.ui.app as app_module
from specmon.config import MonitorConfig, Targets
from specmon.session.server_session import dashboard_session
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui.app import SpecmonApp

SIZE = (160, 50)
WEEK_DAYS = 7.0
SCRAPE_EVERY_S = 1.0
"""The dashboard's defaults (config.py), which a week of real use runs at."""
PROBE_EVERY_S = 10.0
SCREENS_KEPT = 5
TYPES_KEPT = 15
"""The commonest types of the tracked objects, written with each stats line (and the results'
first and last): what grows, when the count does."""
TIMED_STEPS = tuple(step for step in ROUND if step.group != "b" and not step.label.startswith("e "))
"""keys_pty.py's round, less its baseline (started and cancelled: the soak takes its own) and
the comparison's export (its "exported 0 rows" holds only for an empty store)."""


class CountingApp(SpecmonApp):
    """The dashboard, which also writes what it counted and holds to a JSON-lines file."""

    CSS_PATH = str(Path(app_module.__file__).with_name(SpecmonApp.CSS_PATH))  # type: ignore[arg-type]
    """SpecmonApp's (Textual reads a relative path beside the subclass's module)."""

    def __init__(self, stats: Path, every_s: float, **kwargs: Any) -> None:
        """As SpecmonApp; `stats` gets a line every `every_s` seconds."""
        super().__init__(**kwargs)
        self._stats_path = stats
        self._stats_every = every_s
        self._started = time.monotonic()
        self.samples = 0
        self.probes = 0
        self.restarts = 0
        """Restarts the session saw: the soak makes one every `--restart-every` seconds."""
        self._count("sample", "samples")
        self._count("probe_done", "probes")
        on_sample = self.session.live.on_sample

        def counting_restarts(sample: Any) -> Any:
            changes = on_sample(sample)
            self.restarts += sum(1 for change in changes if change.restart)
            return changes

        self.session.live.on_sample = counting_restarts  # type: ignore[method-assign]

    def on_mount(self) -> None:
        """The stats timer. Textual runs SpecmonApp's `on_mount` itself, before this one (a
        handler of every class in the MRO): calling it here too started every worker twice,
        two samplers feeding one session, whose scrapes then came out of order (a restart
        seen ~20 times a second) in the runs before 2026-12-04 20:30 UTC."""
        self.set_interval(self._stats_every, self._write_stats)

    def _count(self, name: str, counter: str) -> None:
        """Count each call of the session's `name` (a sample, a probe) in `counter`."""
        taken = getattr(self.session, name)

        def counted(*args: Any) -> None:
            setattr(self, counter, getattr(self, counter) + 1)
            taken(*args)

        setattr(self.session, name, counted)

    def _write_stats(self) -> None:
        objects, resident = live_memory()  # collects first: the types below are of live objects
        kinds = Counter(type(o).__qualname__ for o in gc.get_objects()).most_common(TYPES_KEPT)
        line = {"t": round(time.monotonic() - self._started, 1), "objects": objects,
                "rss_mib": round(resident / 2**20, 1), "samples": self.samples,
                "probes": self.probes, "restarts": self.restarts, "types": dict(kinds),
                "caches": cache_fill()}  # fmt: skip
        with self._stats_path.open("a") as out:
            out.write(json.dumps(line) + "\n")


def dashboard(args: argparse.Namespace) -> int:
    """The child in the pty: the dashboard at the week's rates."""
    config = MonitorConfig(
        url=args.url,
        baseline_url=args.baseline_url,
        interval=args.interval,
        probe_every=args.probe_every,
        probe_tokens=16,
        baseline_runs=2,
        connect_timeout=1.0,
        read_timeout=1.0,
    )
    targets = Targets(
        *(
            Target(url, connect_timeout=1.0, read_timeout=1.0)
            for url in (args.url, args.baseline_url)
        )
    )
    with Store(args.db) as store:
        session = dashboard_session(config, targets, store)
        app = CountingApp(args.stats, args.sample_every, session=session)
        error = app.run_to_end()
    if error is not None:
        print(f"the dashboard crashed: {error!r}", file=sys.stderr)
        return 70
    return 0


def timed_round(
    term: Term, rounds: int, rng: random.Random, errors: list[str]
) -> dict[str, dict[str, float]]:
    """keys_pty.py's round `rounds` times through the pty: each key's median and max."""
    results = Results()
    for _ in range(rounds):
        one_round(term, rng, results, errors)
    return {label: summary(times) for label, times in results.keys.items()}


def one_round(term: Term, rng: random.Random, results: Results, errors: list[str]) -> None:
    """Every screen opened and closed; a key the dashboard does not answer within keys_pty's
    5 s is an error (the round ends there, back on the dashboard)."""
    try:
        press_rounds(term, 1, rng, results, TIMED_STEPS)
    except Timeout as exc:
        # The first few with the screen they left, the rest by their first line.
        errors.append(str(exc) if len(errors) < SCREENS_KEPT else str(exc).splitlines()[0])
        for _ in range(2):
            os.write(term.fd, ESC)
            term.idle(0.5)


def main() -> int:
    """Run the soak (or, with --dashboard, the dashboard it watches)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--days", type=float, default=WEEK_DAYS, help="simulated days")
    parser.add_argument("--fault-s", type=float, default=20.0)
    parser.add_argument("--restart-every", type=float, default=600.0)
    parser.add_argument("--baseline-every", type=float, default=900.0)
    parser.add_argument("--sample-every", type=float, default=60.0)
    parser.add_argument(
        "--settle-s", type=float, default=600.0, help="seconds left out of the trends"
    )
    parser.add_argument("--rounds", type=int, default=10, help="timed rounds at start and end")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--dashboard", action="store_true", help=argparse.SUPPRESS)
    for name in ("--url", "--baseline-url", "--db", "--stats"):
        parser.add_argument(name, help=argparse.SUPPRESS)
    parser.add_argument("--interval", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--probe-every", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dashboard:
        args.db, args.stats = Path(args.db), Path(args.stats)
        return dashboard(args)
    sys.setswitchinterval(0.001)  # as keys_pty: the reader stamps reads within 1 ms
    result = soak(args)
    print(json.dumps(result, indent=2))
    flat = all(result[name]["flat"] for name in ("rss_trend_mib", "objects_trend"))
    return 0 if flat and not result["errors"] else 1


def soak(args: argparse.Namespace) -> dict[str, Any]:
    """Run the week; the figures."""
    squeeze = args.days * 86400 / (args.hours * 3600)
    interval, probe_every = SCRAPE_EVERY_S / squeeze, PROBE_EVERY_S / squeeze
    rng = random.Random(args.seed)
    errors: list[str] = []
    sims = Simulators()
    with tempfile.TemporaryDirectory(prefix="specmon-soak-week-") as home:
        stats = Path(home) / "stats.jsonl"
        argv = [sys.executable, __file__, "--dashboard", "--url", sims.spec_url,
                "--baseline-url", sims.base_url, "--db", str(Path(home) / "soak.db"),
                "--stats", str(stats), "--interval", str(interval), "--probe-every",
                str(probe_every), "--sample-every", str(args.sample_every)]  # fmt: skip
        # The dashboard runs the specmon beside this script (not one installed elsewhere), so that
        # a checkout edited while the soak runs does not change it midway (screens load lazily).
        root = str(Path(__file__).resolve().parents[1])
        env = {"TERM": "xterm-256color", "HOME": home, "PATH": "/usr/bin:/bin", "PYTHONPATH": root}
        term = Term(argv, SIZE, env, home)
        try:
            term.wait_for(lambda screen: all(p in screen for p in PANELS), term.started, "start")
            term.idle(30.0)
            keys_start = timed_round(term, args.rounds, rng, errors)

            def so_far(keys_end: dict[str, dict[str, float]]) -> dict[str, Any]:
                return figures(
                    args, interval, probe_every, stats, term, keys_start, keys_end, errors
                )

            write_out(args, so_far({}))
            start = time.monotonic()
            end = start + args.hours * 3600
            next_restart = next_baseline = start
            fault = 0
            while time.monotonic() < end:
                now = time.monotonic()
                if now >= next_restart:
                    sims.ask("restart")
                    next_restart = now + args.restart_every
                    write_out(args, so_far({}))
                if now >= next_baseline:
                    os.write(term.fd, b"b")
                    term.idle(1.0)
                    next_baseline = now + args.baseline_every
                sims.ask("fault", fault % len(FAULTS))
                until = time.monotonic() + args.fault_s
                while time.monotonic() < until:
                    one_round(term, rng, Results(), errors)
                sims.ask("clear")
                until = time.monotonic() + args.fault_s
                while time.monotonic() < until:
                    one_round(term, rng, Results(), errors)
                fault += 1
            term.idle(30.0)
            keys_end = timed_round(term, args.rounds, rng, errors)
            term.quit()
        except BaseException:
            term.kill()
            raise
        finally:
            sims.close()
        result = so_far(keys_end)
        result["finished"] = True
        write_out(args, result)
    return result


def write_out(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """`result` to `--out`, if given."""
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


def figures(
    args: argparse.Namespace,
    interval: float,
    probe_every: float,
    stats: Path,
    term: Term,
    keys_start: dict[str, dict[str, float]],
    keys_end: dict[str, dict[str, float]],
    errors: list[str],
) -> dict[str, Any]:
    """The soak's figures from what the dashboard wrote to `stats` so far."""
    # None yet when the start's round ends before the first `--sample-every`.
    text = stats.read_text() if stats.exists() else ""
    lines = [json.loads(line) for line in text.splitlines()]
    last = lines[-1] if lines else {"samples": 0, "probes": 0}
    return {
        "finished": False,
        "command": " ".join(["python", "benchmarks/soak_week.py", *sys.argv[1:]]),
        "hours": args.hours,
        "interval_s": round(interval, 4),
        "probe_every_s": round(probe_every, 3),
        "samples": last["samples"],
        "simulated_days_of_samples": round(last["samples"] * SCRAPE_EVERY_S / 86400, 2),
        "probes": last["probes"],
        "simulated_days_of_probes": round(last["probes"] * PROBE_EVERY_S / 86400, 2),
        # One per `--restart-every` seconds; far more: samples out of order (or a bug).
        "restarts_seen": last.get("restarts"),
        "rss_trend_mib": trend(
            [(line["t"], line["rss_mib"]) for line in lines], args.settle_s, RSS_FLAT_WITHIN
        ),
        # The dashboard's clock starts a minute or two before this one (its start, the first
        # timed round): against a settling time of minutes, the same one serves both.
        "objects_trend": trend(
            [(line["t"], float(line["objects"])) for line in lines],
            args.settle_s,
            OBJECTS_FLAT_WITHIN,
        ),
        "keys_start": keys_start,
        "keys_end": keys_end,
        "key_median_ms_start_end": {
            label: [keys.get(label, {}).get("median_ms") for keys in (keys_start, keys_end)]
            for label in {**keys_start, **keys_end}
        },
        "all_keys_median_ms_start_end": [
            statistics.median(k["median_ms"] for k in keys.values()) if keys else None
            for keys in (keys_start, keys_end)
        ],
        "errors": errors,
        "pty_resyncs": term.resyncs,
        "pty_dropped_mib": round(term.dropped_bytes / 2**20, 1),
        "object_types_first_last": [lines[0].get("types"), lines[-1].get("types")] if lines else [],
        "caches_first_last": [lines[0].get("caches"), lines[-1].get("caches")] if lines else [],
        "rss_mib_over_time": [(line["t"], line["rss_mib"]) for line in lines],
        "objects_over_time": [(line["t"], line["objects"]) for line in lines],
    }


if __name__ == "__main__":
    sys.exit(main())
