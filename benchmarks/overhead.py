"""A monitor's own cost while it watches a server: CPU seconds per minute and peak RSS, in tmux.

Runs each monitor in a detached tmux session of the given size, at a 1 s refresh, and samples
its process after a 3 s start-up: its threads' CPU time as the scheduler counts it (to the
nanosecond, on Linux) and its RSS. Configurations alternate round by round so
machine noise spreads over all of them; medians are reported.

    # specmon alone, against the built-in simulator, probe on and off:
    python benchmarks/overhead.py --seconds 60 --rounds 3
    # specmon against vllmstat, same real vLLM server, same refresh and size:
    python benchmarks/overhead.py --url http://127.0.0.1:8000 --vllmstat /tmp/vs/bin/vllmstat \
        --sizes 80x24 --no-probe-only --seconds 60 --rounds 3
    # this checkout against another (the code before a change), alternating round by round:
    mkdir /tmp/before && git archive COMMIT specmon | tar -x -C /tmp/before
    python benchmarks/overhead.py --tree before=/tmp/before --no-probe-only
    # ... or a commit archived for the run (benchmarks/before_tree.py):
    python benchmarks/overhead.py --before COMMIT --no-probe-only --together
    # with the lasting history on (the default) and off (--no-history), alternating:
    python benchmarks/overhead.py --sizes 80x24 --no-probe-only --no-history-too --rounds 3
    # ... or all at the same time, each in its own tmux (`--together`: a busy machine's load
    # then falls on every configuration alike, where one after another it falls on some)

Prints a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import psutil
from before_tree import archived

from specmon.sim import SimConfig, SimThread

_RUNS = itertools.count()


@dataclass(frozen=True)
class Config:
    """One thing to measure."""

    tool: str
    size: tuple[int, int]
    probe: bool
    tree: tuple[str, str] | None = None  # (label, path) of another checkout of specmon
    history: bool = True  # False: --no-history (nothing written to the store)
    record: bool = False  # `--record FILE` on

    def label(self) -> str:
        """How the table names it."""
        probe = (
            ""
            if self.tool != "specmon"
            else (" probe on (every 10 s)" if self.probe else " probe off")
        )
        tree = f" ({self.tree[0]})" if self.tree else ""
        history = "" if self.history else " --no-history"
        return f"{self.tool}{tree}{probe}{history}{', recording' if self.record else ''}"


@dataclass(frozen=True)
class Result:
    """One run of one configuration."""

    config: Config
    cpu_s_per_min: float
    peak_rss_mib: float


def command(config: Config, url: str, vllmstat: str | None, db: str) -> list[str]:
    """The command line of a configuration (both tools refresh every second)."""
    if config.tool == "vllmstat":
        assert vllmstat is not None
        return [vllmstat, "--url", url, "--interval", "1"]
    probe = [] if config.probe else ["--no-probe"]
    probe += [] if config.history else ["--no-history"]
    # -P: `-m` would put the current directory (this checkout) ahead of PYTHONPATH.
    tree = ["env", f"PYTHONPATH={config.tree[1]}"] if config.tree else []
    python = [sys.executable, "-P"] if config.tree else [sys.executable]
    record = ["--record", db.removesuffix(".db") + ".jsonl"] if config.record else []
    return [
        *tree,
        *python,
        "-m",
        "specmon",
        "--url",
        url,
        "--interval",
        "1",
        "--db",
        db,
        *probe,
        *record,
    ]


def measure(config: Config, argv: list[str], seconds: float) -> Result:
    """Run one monitor in tmux for `seconds` and measure its process."""
    session = f"overhead-{os.getpid()}-{next(_RUNS)}"
    width, height = config.size
    tmux = ["tmux", "-L", session]  # a server of its own: nobody else's kill-server stops it
    subprocess.run(
        [
            *tmux,
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            str(width),
            "-y",
            str(height),
            " ".join(argv),
        ],
        check=True,
    )
    try:
        panes = [*tmux, "list-panes", "-t", session, "-F", "#{pane_pid}"]
        pane = psutil.Process(
            int(subprocess.run(panes, capture_output=True, text=True, check=True).stdout)
        )
        time.sleep(3)  # start-up (imports, first paint) is not steady-state cost
        process = max([pane, *pane.children(recursive=True)], key=lambda p: p.memory_info().rss)
        start = thread_cpu(process.pid)
        seen = dict(start)
        before = process.cpu_times()
        t0 = time.monotonic()
        peak = 0
        while time.monotonic() - t0 < seconds:
            peak = max(peak, process.memory_info().rss)
            seen.update(thread_cpu(process.pid))  # a thread that ends keeps its last figure
            time.sleep(0.5)
        seen.update(thread_cpu(process.pid))
        after = process.cpu_times()
        elapsed = time.monotonic() - t0
        if seen:
            used = sum(cpu - start.get(tid, 0.0) for tid, cpu in seen.items())
        else:  # not Linux: whole clock ticks (10 ms), so runs of a minute or more
            used = (after.user - before.user) + (after.system - before.system)
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
    return Result(config, 60 * used / elapsed, peak / 2**20)


def thread_cpu(pid: int) -> dict[int, float]:
    """Each thread's CPU seconds as the scheduler counts them, to the nanosecond (Linux's
    /proc/PID/task/TID/schedstat); empty elsewhere.

    The process's own figures (`psutil.Process.cpu_times`) come in whole clock ticks, 10 ms:
    over a minute of an idle monitor (~0.3 s) the two ends' rounding alone moved a run by up to
    ±0.02 s, ~7%.
    """
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    cpu: dict[int, float] = {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as stat:
                cpu[int(tid)] = int(stat.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):  # ended meanwhile
            continue
    return cpu


@contextlib.contextmanager
def server(url: str | None) -> Iterator[str]:
    """The given server, or the built-in simulator (metrics on)."""
    if url is not None:
        yield url
        return
    with SimThread(SimConfig(enable_metrics=True)) as sim:
        yield sim.url


def main() -> int:
    """Alternate configurations over rounds; print the medians."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="a real server (default: the built-in simulator)")
    parser.add_argument("--vllmstat", metavar="PATH", help="also measure this vllmstat")
    parser.add_argument("--sizes", default="80x24,160x50")
    parser.add_argument("--no-probe-only", action="store_true", help="specmon without probe only")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="also measure specmon from another checkout (e.g. the commit "
        "before a change), alternating with this one",
    )
    parser.add_argument(
        "--before",
        metavar="REF",
        help="also measure this commit's specmon (archived for the run), as --tree does",
    )
    parser.add_argument(
        "--together",
        action="store_true",
        help="run the configurations at the same time in each round (each in its "
        "own tmux), not one after another: on a machine shared with other work "
        "they then see the same load",
    )
    parser.add_argument(
        "--no-history-too",
        action="store_true",
        help="also measure specmon with --no-history, alternating",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="also measure each specmon configuration with --record on",
    )
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is needed", file=sys.stderr)
        return 2
    sizes = [tuple(int(n) for n in s.split("x")) for s in args.sizes.split(",")]
    configs = [
        Config("specmon", (w, h), probe)
        for w, h in sizes
        for probe in ((False,) if args.no_probe_only else (False, True))
    ]
    trees = [t.partition("=")[::2] for t in args.tree]
    if args.before:
        before = tempfile.mkdtemp(prefix="specmon-before-")
        atexit.register(shutil.rmtree, before, ignore_errors=True)
        trees.append(("before", archived(args.before, Path(before) / "tree")))
    for label, path in trees:
        configs += [replace(c, tree=(label, path)) for c in configs if c.tree is None]
    if args.no_history_too:
        configs += [replace(c, history=False) for c in configs if c.tree is None]
    if args.record:
        configs += [replace(c, record=True) for c in configs if c.history]
    if args.vllmstat:
        configs += [Config("vllmstat", (w, h), False) for w, h in sizes]
    results: list[Result] = []
    with server(args.url) as url:
        for round_ in range(args.rounds):
            runs = [
                (c, command(c, url, args.vllmstat, f"/tmp/overhead-{os.getpid()}-{round_}-{i}.db"))
                for i, c in enumerate(configs)
            ]
            if args.together:  # the same minute for all: a shared machine's load hits each alike
                with ThreadPoolExecutor(len(runs)) as pool:
                    done = list(pool.map(lambda run: measure(*run, args.seconds), runs))
            else:
                done = []
                for config, argv in runs:
                    done.append(measure(config, argv, args.seconds))
            for result in done:
                results.append(result)
                print(f"round {round_ + 1}: {result}", file=sys.stderr, flush=True)
    print("| terminal | monitor | CPU s/min (median) | % of one core | peak RSS MiB (median) |")
    print("|---|---|---|---|---|")
    medians: dict[Config, float] = {}
    for config in configs:
        runs = [r for r in results if r.config == config]
        cpu = medians[config] = statistics.median(r.cpu_s_per_min for r in runs)
        rss = statistics.median(r.peak_rss_mib for r in runs)
        print(
            f"| {config.size[0]}x{config.size[1]} | {config.label()} | {cpu:.2f} | "
            f"{cpu / 60:.1%} | {rss:.0f} |"
        )
    for w, h in sizes:
        ours, theirs = Config("specmon", (w, h), False), Config("vllmstat", (w, h), False)
        if theirs in medians:
            print(f"\n{w}x{h}: specmon / vllmstat CPU = {medians[ours] / medians[theirs]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
