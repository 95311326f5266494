"""How many servers one `specmon exporter` watches at 1 Hz within a CPU budget.

One exporter over N simulated servers (8 simulated GPUs each, as benchmarks/fleet_overhead.py
runs them: the same helper process of simulators, the same config file: `/metrics` and the GPUs
every second, server info every 5 s, a probe every 10 s), for each N in turn. After a warm-up,
the exporter's CPU (psutil: user + system of it and its children) is read over a few windows;
its share of one core is the median of the windows. A scrape of its /metrics at the start of
every window stands for Prometheus and checks that every target is served.

The cost grows about linearly with the targets (each is the same polls and probes), so a
least-squares line through the medians, share = fixed + per_target × N, gives the targets one
exporter watches within the budget: (budget - fixed) / per_target.

    python benchmarks/exporter_scale.py --targets 4 8 16 32 --windows 3 --window-s 20

Prints a Markdown table for docs/performance.md (and with `--out FILE`, every window as JSON).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil
from fleet_overhead import cpu_s, fleet_toml

WARMUP_S = 8.0  # imports, every target's first info, GPU reading and probe


def measure(urls: list[str], tmp: Path, windows: int, window_s: float) -> tuple[list[float], float]:
    """One exporter over `urls`: its CPU share of one core in each window, and its peak RSS
    (MiB)."""
    toml = fleet_toml(tmp / f"scale-{len(urls)}.toml", urls)
    exporter = subprocess.Popen(
        [
            *(sys.executable, "-m", "specmon", "exporter"),
            *("--config", str(toml), "--listen", "127.0.0.1:0"),
            *("--db", str(tmp / f"scale-{len(urls)}.db")),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert exporter.stdout is not None
    metrics_url = exporter.stdout.readline().split()[3]
    process = psutil.Process(exporter.pid)
    shares: list[float] = []
    peak = 0.0
    try:
        time.sleep(WARMUP_S)
        for _ in range(windows):
            served = httpx.get(metrics_url, timeout=10).text.count("specmon_target_up{")
            assert served == len(urls), f"the exporter served {served} targets of {len(urls)}"
            t0, used0 = time.monotonic(), cpu_s(process)
            while time.monotonic() - t0 < window_s:
                peak = max(peak, process.memory_info().rss / 2**20)
                time.sleep(1.0)
            shares.append((cpu_s(process) - used0) / (time.monotonic() - t0))
    finally:
        exporter.terminate()
        exporter.wait(timeout=10)
    return shares, peak


def line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares (fixed, per_target) of share = fixed + per_target × targets."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


def main() -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--window-s", type=float, default=20.0)
    parser.add_argument("--budget", type=float, default=0.05, help="share of one core")
    parser.add_argument("--out", type=Path, help="write every window here (JSON)")
    args = parser.parse_args()
    helper = subprocess.Popen(
        [
            *(sys.executable, str(Path(__file__).with_name("fleet_overhead.py")), "--serve"),
            *("--targets", str(max(args.targets)), "--gpus", str(args.gpus)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert helper.stdout is not None
    results: dict[int, tuple[list[float], float]] = {}
    try:
        urls = []
        while (line_ := helper.stdout.readline().strip()) != "ready":
            urls.append(line_)
        with tempfile.TemporaryDirectory(prefix="specmon-scale-") as tmp:
            for n in args.targets:
                results[n] = measure(urls[:n], Path(tmp), args.windows, args.window_s)
    finally:
        helper.terminate()
        helper.wait(timeout=10)
    medians = [(n, statistics.median(shares)) for n, (shares, _) in results.items()]
    print(
        f"one exporter, N servers × {args.gpus} GPUs, 1 s interval, probe every 10 s; "
        f"{args.windows} windows of {args.window_s:g} s each (median)\n"
    )
    print("| servers | exporter, % of one core (median) | windows | CPU s/min | peak RSS MiB |")
    print("|---|---|---|---|---|")
    for n, median in medians:
        shares, peak = results[n]
        each = ", ".join(f"{s:.1%}" for s in shares)
        print(f"| {n} | **{median:.1%}** | {each} | {60 * median:.2f} | {peak:.0f} |")
    if len(medians) >= 2:
        fixed, per_target = line(medians)
        most = int((args.budget - fixed) / per_target) if per_target > 0 else None
        print(
            f"\nfit: {fixed:.2%} + {per_target:.3%} a server; "
            f"within {args.budget:.0%} of a core: {most} servers"
        )
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "gpus": args.gpus,
                    "window_s": args.window_s,
                    "runs": {
                        str(n): {"shares": shares, "peak_rss_mib": peak}
                        for n, (shares, peak) in results.items()
                    },
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
