"""What browser tabs of `specmon web` cost the server and this machine: 1, 2, 4 … tabs.

For each tab count, starts the demo's pair of simulated servers (speculative, and its plain twin
as the baseline server), `specmon web` on them, and that many tabs in Debian's Chromium
(Playwright, /usr/bin/chromium); once every tab shows a live decode figure, counts for
`--seconds` the requests each server received, by path (`SimServer.requests`), and the CPU time
and memory of the `specmon web` process (the hub: sampler, probe, textual-serve) and of each
tab's dashboard process.

    pip install -e '.[dev]'   # textual-serve, playwright
    python benchmarks/web_tabs.py --tabs 1 2 4 --seconds 60 \
        --out benchmarks/results/web-tabs-YYYY-MM-DD.json

Prints a Markdown table; the JSON holds every figure. One run on a shared machine: compare the
rows of one run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "web"))
from web_helpers import CHROMIUM, open_tab  # noqa: E402

from specmon.sim import SimConfig, SimThread  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def measure(tabs: int, seconds: float, browser: Any) -> dict[str, Any]:
    """One tab count: requests per minute at each server, CPU and memory of each process."""
    config = SimConfig()
    with (
        SimThread(config) as spec,
        SimThread(replace(config, speculative_algorithm=None)) as base,
        tempfile.TemporaryDirectory() as tmp,
    ):
        web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "specmon",
                "web",
                "--url",
                spec.url,
                "--baseline-url",
                base.url,
                "--db",
                f"{tmp}/db",
                "--web-port",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert web.stdout is not None
        found = re.search(r" on (http://\S+)$", web.stdout.readline().strip())
        assert found
        pages = []
        try:
            for _ in range(tabs):
                pages.append(open_tab(browser, found.group(1)))
                pages[-1].wait_for(r"Decode (\d+\.\d) tok/s \(probe\)")
            hub = psutil.Process(web.pid)
            dashboards = [
                p for p in hub.children(recursive=True) if "specmon.cli.web_tab" in p.cmdline()
            ]
            assert len(dashboards) == tabs
            before = {"spec": dict(spec.server.requests), "base": dict(base.server.requests)}
            cpu_before = [_cpu_s(p) for p in (hub, *dashboards)]
            started = time.monotonic()
            pages[0].page.wait_for_timeout(seconds * 1000)  # the measured window
            elapsed = time.monotonic() - started
            cpu = [
                (_cpu_s(p) - c) / elapsed
                for p, c in zip((hub, *dashboards), cpu_before, strict=True)
            ]
            rss = [p.memory_info().rss / 2**20 for p in (hub, *dashboards)]
            per_min = {
                name: {
                    path: round((n - before[name].get(path, 0)) * 60 / elapsed, 1)
                    for path, n in server.server.requests.items()
                    if n > before[name].get(path, 0)
                }
                for name, server in (("spec", spec), ("base", base))
            }
        finally:
            for tab in pages:
                tab.page.close()
            web.terminate()
            web.wait(timeout=30)
            web.stdout.close()
    return {
        "tabs": tabs,
        "seconds": round(elapsed, 1),
        "requests_per_min": per_min,
        "hub_cpu_pct": round(100 * cpu[0], 1),
        "tab_cpu_pct": [round(100 * c, 1) for c in cpu[1:]],
        "hub_rss_mib": round(rss[0], 1),
        "tab_rss_mib": [round(r, 1) for r in rss[1:]],
    }


def main() -> None:
    """Run every tab count and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tabs", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        browser = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        rows = [measure(n, args.seconds, browser) for n in args.tabs]
        browser.close()
    print(
        "| tabs | spec server /generate per min | spec /metrics per min | hub CPU % | "
        "each tab's CPU % | hub RSS MiB | each tab's RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        spec = row["requests_per_min"]["spec"]
        print(
            f"| {row['tabs']} | {spec.get('/generate', 0)} | {spec.get('/metrics', 0)} | "
            f"{row['hub_cpu_pct']} | {', '.join(map(str, row['tab_cpu_pct']))} | "
            f"{row['hub_rss_mib']} | {', '.join(map(str, row['tab_rss_mib']))} |"
        )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
