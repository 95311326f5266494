"""CPU of reading what a watched server serves each second: an 8-GPU endpoint's scrape,
`/metrics` and server info, parsed as the sampler parses them.

The texts are taken from the simulator (`SimConfig(gpus=8)`, metrics on) while a probe streams,
so that utilisation, power, clocks and counters move between scrapes as they do in a fleet:
`--readings` of each, 0.25 s apart. The GPU readings go through one endpoint's memo in order,
`--passes` times over (what `DcgmSource` does at 1 Hz); `/metrics` through `metrics_from_text`
with its shared line memo warm and its cache of whole idle texts emptied before each (a busy
server's text is new at every scrape); server info through `parse_server_info`.
Process CPU per reading, median over `--rounds`.

    python benchmarks/parse_readings.py --readings 20 --passes 20 --rounds 3
    PYTHONPATH=/tmp/before python -P benchmarks/parse_readings.py     # another checkout

Prints a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import httpx

from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.sim import SimConfig, SimThread
from specmon.sources import metrics as metrics_module
from specmon.sources.backends.sglang import parse_server_info
from specmon.sources.dcgm import telemetry_from_text
from specmon.sources.metrics import metrics_from_text
from specmon.sources.probe import generate_payload
from specmon.sources.scrape_memo import ScrapeMemo


def collect(readings: int) -> tuple[list[str], list[str], dict[str, object]]:
    """`readings` GPU and /metrics texts from a simulator that is generating, and its info."""
    with SimThread(replace(SimConfig(enable_metrics=True), gpus=8)) as sim:
        payload = generate_payload(DEFAULT_PROMPT, 4096)

        def generate() -> None:
            try:
                with httpx.stream("POST", f"{sim.url}/generate", json=payload, timeout=60) as r:
                    for _ in r.iter_bytes():
                        pass
            except httpx.HTTPError:
                pass  # the simulator stopped under it: the readings are taken

        threading.Thread(target=generate, daemon=True).start()
        gpus, metrics = [], []
        for _ in range(readings):
            time.sleep(0.25)
            gpus.append(httpx.get(f"{sim.url}/gpu-metrics").text)
            metrics.append(httpx.get(f"{sim.url}/metrics").text)
        info = httpx.get(f"{sim.url}/server_info").json()
    return gpus, metrics, info


def per_call_ms(run: Callable[[], int]) -> float:
    """Process CPU per reading of `run` (which returns how many it read)."""
    start = time.process_time()
    count = run()
    return 1000 * (time.process_time() - start) / count


def main() -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--readings", type=int, default=20)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    gpus, metrics, info = collect(args.readings)

    def gpu_readings() -> int:
        memo = ScrapeMemo()
        for text in gpus:  # the first pass fills the memo, as the first seconds do
            telemetry_from_text(text, "gpu", memo)
        for _ in range(args.passes):
            for text in gpus:
                telemetry_from_text(text, "gpu", memo)
        return args.passes * len(gpus)

    def metrics_readings() -> int:
        for _ in range(args.passes):
            for text in metrics:
                metrics_module._metrics.cache_clear()  # a busy server: a new text each time
                metrics_from_text(text)
        return args.passes * len(metrics)

    def info_readings() -> int:
        for _ in range(args.passes * 10):
            parse_server_info(info)
        return args.passes * 10

    rows = (("8-GPU endpoint scrape", gpu_readings), ("/metrics", metrics_readings),
            ("server info", info_readings))  # fmt: skip
    print(f"{args.readings} readings of each, {args.passes} passes, {args.rounds} rounds\n")
    print("| reading | CPU ms per reading (median) | rounds |")
    print("|---|---|---|")
    for name, run in rows:
        values = [per_call_ms(run) for _ in range(args.rounds)]
        rounds = ", ".join(f"{v:.3f}" for v in values)
        print(f"| {name} | {statistics.median(values):.3f} | {rounds} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
