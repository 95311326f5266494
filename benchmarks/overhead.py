"""specmon's own cost while monitoring: CPU seconds per minute and peak RSS, in tmux.

Starts a simulated SGLang server, runs `specmon --url … --interval 1` in a detached tmux session
of the given size, and samples the specmon process with psutil. Configurations alternate
round by round so machine noise spreads over all of them.

    python benchmarks/overhead.py --seconds 60 --rounds 3

Prints a Markdown table (medians over rounds) for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import psutil

from specmon.sim import SimConfig, SimThread

SIZES = ((80, 24), (160, 50))


@dataclass(frozen=True)
class Result:
    """One run of one configuration."""

    size: tuple[int, int]
    probe: bool
    cpu_s_per_min: float
    peak_rss_mib: float


def measure(url: str, size: tuple[int, int], probe: bool, seconds: float) -> Result:
    """Run specmon in tmux for `seconds` and measure it."""
    session = f"specmon-overhead-{os.getpid()}"
    command = [sys.executable, "-m", "specmon", "--url", url, "--interval", "1",
               "--db", f"/tmp/{session}.db"] + ([] if probe else ["--no-probe"])  # fmt: skip
    width, height = size
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(width), "-y",
                    str(height), " ".join(command)], check=True)  # fmt: skip
    try:
        panes = ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"]
        pane_pid = int(subprocess.run(panes, capture_output=True, text=True, check=True).stdout)
        shell = psutil.Process(pane_pid)
        deadline = time.monotonic() + 20
        process = shell
        while time.monotonic() < deadline:  # the pane runs specmon directly or via a shell
            found = [p for p in [shell, *shell.children(recursive=True)]
                     if "specmon" in " ".join(p.cmdline())]  # fmt: skip
            if found:
                process = found[-1]
                break
            time.sleep(0.2)
        time.sleep(3)  # start-up (imports, first paint) is not steady-state cost
        start = process.cpu_times()
        t0 = time.monotonic()
        peak = 0
        while time.monotonic() - t0 < seconds:
            peak = max(peak, process.memory_info().rss)
            time.sleep(0.5)
        end = process.cpu_times()
        used = (end.user - start.user) + (end.system - start.system)
        elapsed = time.monotonic() - t0
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    return Result(size, probe, 60 * used / elapsed, peak / 2**20)


def main() -> int:
    """Alternate configurations over rounds; print the medians."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is needed", file=sys.stderr)
        return 2
    results: list[Result] = []
    with SimThread(SimConfig(enable_metrics=True)) as sim:
        for round_ in range(args.rounds):
            for size in SIZES:
                for probe in (False, True):
                    result = measure(sim.url, size, probe, args.seconds)
                    results.append(result)
                    print(f"round {round_ + 1}: {result}", file=sys.stderr, flush=True)
    print("| terminal | probe | CPU s/min (median) | % of one core | peak RSS MiB (median) |")
    print("|---|---|---|---|---|")
    for size in SIZES:
        for probe in (False, True):
            runs = [r for r in results if r.size == size and r.probe == probe]
            cpu = statistics.median(r.cpu_s_per_min for r in runs)
            rss = statistics.median(r.peak_rss_mib for r in runs)
            print(f"| {size[0]}x{size[1]} | {'on (every 10 s)' if probe else 'off'} | "
                  f"{cpu:.2f} | {cpu / 60:.1%} | {rss:.0f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
