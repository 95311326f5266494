"""The fleet's own cost: the fleet dashboard and `specmon exporter`, each watching 16 simulated
servers with 8 simulated GPUs each at 1 Hz, side by side in one run with the single-server
dashboard watching one of them.

The simulators run in a helper process of their own (their CPU is not the monitors'); each
serves its 8 GPUs at `/gpu-metrics` in dcgm-exporter's names. Every monitor samples each
target's server info (5 s), /metrics and GPUs (1 s) and probes it every 10 s; a scrape of the
exporter's /metrics every 15 s stands for Prometheus. The dashboards run in detached tmux
sessions at 80x24, as benchmarks/overhead.py runs them. All three are measured over the same
window after a warm-up.

    python benchmarks/fleet_overhead.py --targets 16 --gpus 8 --seconds 60 --rounds 2
    python benchmarks/fleet_overhead.py --tree before=/tmp/before   # and another checkout
    python benchmarks/fleet_overhead.py --before HEAD~1 --rounds 4 \
        --json benchmarks/results/fleet-overhead-DATE.json

With `--tree LABEL=PATH`, each round also runs all three from that checkout (e.g. a worktree of
the commit before a change), one after the other, alternating which goes first, against the
same simulators; `--before REF` runs that commit's tree so (benchmarks/before_tree.py) and
prints the ratio of the medians. Prints a Markdown table for docs/performance.md, the load
average beside each round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import httpx
import psutil
from before_tree import archived, commit, load
from overhead import Config, command

from specmon.sim import SimConfig, SimThread

WARMUP_S = 5.0  # imports, every target's first info, GPU and probe reading
SCRAPE_EVERY_S = 15.0  # Prometheus's default-ish scrape interval


def serve(targets: int, gpus: int) -> None:
    """The helper process: `targets` simulators with `gpus` GPUs each, until killed."""
    sims = [
        SimThread(replace(SimConfig(enable_metrics=True), gpus=gpus, seed=i))
        for i in range(targets)
    ]
    for sim in sims:
        sim.__enter__()
        print(sim.url, flush=True)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


def cpu_s(process: psutil.Process) -> float:
    """User + system CPU seconds of a process and its children."""
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        times = p.cpu_times()
        total += times.user + times.system
    return total


def fleet_toml(path: Path, urls: list[str]) -> Path:
    """The fleet's config file: every server at 1 Hz, a probe every 10 s, its simulated GPUs."""
    path.write_text(
        "interval = 1\nprobe_every = 10\n"
        + "".join(f'[[targets]]\nurl = "{u}"\ngpu_metrics = "{u}/gpu-metrics"\n' for u in urls)
    )
    return path


def one_round(
    urls: list[str], tmp: Path, seconds: float, round_: int, tree: tuple[str, str] | None
) -> dict[str, float]:
    """Run the exporter and the dashboards side by side once, from this checkout or `tree`
    ((label, path) of another); CPU s/min and peak RSS of each."""
    toml = fleet_toml(tmp / "fleet.toml", urls)
    # -P: `-m` would put the current directory ahead of PYTHONPATH (as overhead.py does).
    specmon = [sys.executable, "-P", "-m", "specmon"] if tree else [sys.executable, "-m", "specmon"]
    env = {**os.environ, "PYTHONPATH": tree[1]} if tree else None
    suffix = f"{round_}-{tree[0] if tree else 'this'}"
    exporter = subprocess.Popen(
        [
            *specmon,
            "exporter",
            "--config",
            str(toml),
            "--listen",
            "127.0.0.1:0",
            "--db",
            str(tmp / f"exporter-{suffix}.db"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert exporter.stdout is not None
    metrics_url = exporter.stdout.readline().split()[3]
    session = f"fleet-overhead-{os.getpid()}-{suffix}"
    tmux = ["tmux", "-L", session]
    single = command(
        Config("specmon", (80, 24), True, tree), urls[0], None, str(tmp / f"d{suffix}.db")
    )
    single += ["--gpu-metrics", f"{urls[0]}/gpu-metrics"]
    in_tree = ["env", f"PYTHONPATH={tree[1]}"] if tree else []
    fleet = [*in_tree, *specmon, "--config", str(toml), "--db", str(tmp / f"f{suffix}.db")]
    panes = {}
    for name, argv in (("single", single), ("fleet", fleet)):
        new = "new-session" if not panes else "new-window"
        where = ["-s", session] if not panes else ["-t", session]
        size = ["-x", "80", "-y", "24"] if not panes else []  # a window takes its session's
        # No output captured: the tmux server would hold the pipe open, and the run never end.
        subprocess.run([*tmux, new, "-d", *where, *size, " ".join(argv)], check=True)
        listed = [*tmux, "list-panes", "-s", "-t", session, "-F", "#{pane_pid}"]
        pids = subprocess.run(listed, capture_output=True, text=True, check=True).stdout.split()
        panes[name] = psutil.Process(int(pids[-1]))
    try:
        time.sleep(WARMUP_S)
        processes = {"exporter": psutil.Process(exporter.pid), **panes}
        start = {name: cpu_s(p) for name, p in processes.items()}
        peak = dict.fromkeys(processes, 0.0)
        t0 = next_scrape = time.monotonic()
        samples = 0
        while (now := time.monotonic()) - t0 < seconds:
            if now >= next_scrape:
                text = httpx.get(metrics_url, timeout=10).text
                samples = text.count("specmon_target_up{")
                next_scrape += SCRAPE_EVERY_S
            for name, p in processes.items():
                rss = sum(q.memory_info().rss for q in [p, *p.children(recursive=True)])
                peak[name] = max(peak[name], rss / 2**20)
            time.sleep(0.5)
        elapsed = time.monotonic() - t0
        used = {name: cpu_s(p) - start[name] for name, p in processes.items()}
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
        exporter.terminate()
        exporter.wait(timeout=10)
    assert samples == len(urls), f"the exporter served {samples} targets of {len(urls)}"
    result = {f"{n} cpu": 60 * u / elapsed for n, u in used.items()}
    result |= {f"{n} rss": peak[n] for n in processes}
    return result


def main() -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", type=int, default=16)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--tree", metavar="LABEL=PATH", help="also measure another checkout of specmon, alternating"
    )
    parser.add_argument(
        "--before", metavar="REF", help="also measure this commit's specmon, alternating"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write every round here too")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.targets, args.gpus)
        return 0
    helper = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve",
            "--targets",
            str(args.targets),
            "--gpus",
            str(args.gpus),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert helper.stdout is not None
    try:
        urls = []
        while (line := helper.stdout.readline().strip()) != "ready":
            urls.append(line)
        with tempfile.TemporaryDirectory(prefix="specmon-fleet-") as tmp:
            label, _, path = (args.tree or "").partition("=")
            if args.before:
                label, path = "before", archived(args.before, Path(tmp) / "before")
            trees: list[tuple[str, str] | None] = [None, (label, path)] if path else [None]
            results: dict[tuple[str, str] | None, list[dict[str, float]]] = {t: [] for t in trees}
            for r in range(args.rounds):
                for tree in trees if r % 2 == 0 else trees[::-1]:
                    result = one_round(urls, Path(tmp), args.seconds, r, tree)
                    result["load1"] = load()[0]
                    results[tree].append(result)
                    which = tree[0] if tree else "this tree"
                    shares = ", ".join(
                        f"{k.split()[0]} {v / 60:.1%}" for k, v in result.items() if "cpu" in k
                    )
                    print(f"round {r + 1}, {which}: {shares}; load {result['load1']:.1f}")
    finally:
        helper.terminate()
        helper.wait(timeout=10)
    print(
        f"{args.targets} targets × {args.gpus} GPUs, 1 s interval, probe every 10 s, "
        f"{args.seconds:g} s × {args.rounds} rounds (medians)\n"
    )
    print("| monitor | watches | CPU s/min | % of one core | peak RSS MiB |")
    print("|---|---|---|---|---|")
    fleet, one = f"{args.targets} servers × {args.gpus} GPUs", f"1 server × {args.gpus} GPUs"
    rows = (
        ("fleet dashboard (80x24)", fleet),
        ("exporter", fleet),
        ("single dashboard (80x24)", one),
    )
    for name, watches in rows:
        key = name.split()[0]  # fleet, exporter, single
        for tree, rounds in results.items():
            cpu = statistics.median(r[f"{key} cpu"] for r in rounds)
            rss = statistics.median(r[f"{key} rss"] for r in rounds)
            which = f" ({tree[0]})" if tree else ""
            print(f"| {name}{which} | {watches} | {cpu:.2f} | {cpu / 60:.1%} | {rss:.0f} |")
    medians = {
        tree[0] if tree else "this tree": {
            key: statistics.median(r[key] for r in rounds) for key in rounds[0]
        }
        for tree, rounds in results.items()
    }
    if len(medians) == 2:
        (_, got), (label, other) = medians.items()
        for key in ("fleet cpu", "exporter cpu", "single cpu"):
            print(f"{key}: this tree / {label} = {got[key] / other[key]:.2f}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "command": " ".join(sys.argv),
                    "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "this tree": commit(),
                    "before": args.before or args.tree,
                    "rounds": {
                        tree[0] if tree else "this tree": rounds for tree, rounds in results.items()
                    },
                    "medians": medians,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
