"""`specmon --prometheus` over 500 servers: the TUI's CPU share and its keys, through a real
Prometheus.

A child process serves exporter-format text for `--servers` synthetic targets (every family
`specmon --prometheus` reads, values moving at each scrape, a few down, losing or stale); a real
Prometheus (/usr/bin/prometheus) scrapes it each second; `specmon --prometheus URL --interval 1`
runs in a pty (benchmarks/keys_pty.py's `Term`, read by pyte). Once the table shows every server,
the TUI's CPU share of one core is taken over `--windows` windows of `--window-s` seconds (its
process's user+system time, psutil), then `o` (the table's next order, the heading saying it)
is pressed `--presses` times, each timed from the write of the key to the read after which the
screen shows the new order.

    python benchmarks/prometheus_fleet.py --servers 500 --windows 3 --window-s 20 --presses 20
    python benchmarks/prometheus_fleet.py --servers 500 --before 4ee5b8b --rounds 2 \
        --json benchmarks/results/prometheus-fleet-DATE.json

Prints the medians as a Markdown line. With `--before REF`, that commit's tree (git archive
into a temporary folder: `specmon/` and the themes beside it, run through PYTHONPATH by the same
console script) and this tree's alternate `--rounds` times over the same Prometheus, and each
prints its line, then the after/before ratio of the medians over all its windows. Times and
shares are of one run on a shared machine: the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import psutil
from before_tree import archived, commit
from keys_pty import Term, shows, specmon_argv

from specmon.session.fleet_order import ORDERS

PROMETHEUS = "/usr/bin/prometheus"


def exposition(servers: int, now: float, probe_every: float) -> bytes:
    """Exporter-format text of `servers` targets, as `specmon exporter` serves them: each
    target's figures change at its own probe, every `probe_every` seconds, the probes spread
    over that time (the exporter's default is 10 s)."""
    lines: list[str] = []
    for i in range(servers):
        rng = random.Random(i * 1_000_003 + int(now / probe_every + i / servers))
        t = f'target="http://10.0.{i // 250}.{i % 250}:8000"'
        down = i % 97 == 0
        lines.append(f"specmon_target_up{{{t}}} {0 if down else 1}")
        lines.append(
            f'specmon_target_info{{{t},name="node{i:03d}",backend="sglang",version="0.5.23",'
            f'model="m",algorithm="EAGLE3",speculation="EAGLE3 3/1/4",tp_size="8"}} 1'
        )
        if down:
            continue
        gain = rng.uniform(-0.3, 0.7) if i % 13 else rng.uniform(-0.4, -0.2)
        lines += [
            f"specmon_probe_success{{{t}}} 1",
            f"specmon_probe_decode_tokens_per_second{{{t}}} {rng.uniform(80, 200):.3f}",
            f"specmon_probe_accept_length{{{t}}} {rng.uniform(1.5, 3.5):.3f}",
            f"specmon_probe_cycle_seconds{{{t}}} {rng.uniform(0.015, 0.03):.5f}",
            f"specmon_speedup_ratio{{{t}}} {gain:.4f}",
            f"specmon_speedup_ratio_low{{{t}}} {gain - 0.05:.4f}",
            f"specmon_speedup_ratio_high{{{t}}} {gain + 0.05:.4f}",
            f'specmon_baseline_state{{{t},state="valid"}} {0 if i % 31 == 0 else 1}',
            f'specmon_baseline_state{{{t},state="stale"}} {1 if i % 31 == 0 else 0}',
        ]
    return ("\n".join(lines) + "\n").encode()


def serve(port: int, servers: int, probe_every: float) -> None:
    """The synthetic exporter (a child process: its CPU is not the TUI's)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = exposition(servers, time.time(), probe_every)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def prometheus(servers: int, tmp: Path, probe_every: float = 10.0) -> Iterator[str]:
    """A real Prometheus scraping the synthetic exporter each second, holding every series."""
    exporter_port, port = free_port(), free_port()
    child = multiprocessing.Process(
        target=serve, args=(exporter_port, servers, probe_every), daemon=True
    )
    child.start()
    config = tmp / "prometheus.yml"
    config.write_text(
        json.dumps(
            {
                "global": {"scrape_interval": "1s"},
                "scrape_configs": [
                    {
                        "job_name": "specmon",
                        "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}],
                    }
                ],
            }
        )
    )
    server = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                answer = httpx.get(f"{url}/api/v1/query", params={"query": "specmon_target_up"})
                if len(answer.json()["data"]["result"]) == servers:
                    break
            if time.monotonic() > deadline:
                raise SystemExit("Prometheus never held every server's series")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        child.terminate()


def cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def measure(
    args: argparse.Namespace, url: str, home: str, code: str | None = None
) -> tuple[list[float], list[float]]:
    """The TUI's CPU shares per window, and the `o` key's times; `code`: a folder holding the
    `specmon` package to run instead of the installed one (PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "TEXTUAL"))}
    env |= {"TERM": "xterm-256color", "HOME": home, "XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home}
    if code is not None:
        env["PYTHONPATH"] = code
    argv = [*specmon_argv(), "--prometheus", url, "--interval", "1"]
    term = Term(argv, (160, 50), env, home)
    try:
        term.wait_for(shows(f"{args.servers} servers"), term.started, "the full table")
        process = psutil.Process(term.pid)
        shares = []
        for _ in range(args.windows):
            t0, used0 = time.monotonic(), cpu_s(process)
            term.idle(args.window_s)
            shares.append((cpu_s(process) - used0) / (time.monotonic() - t0))
        keys = []
        names = [name for name, _ in ORDERS]
        shown = 0
        rng = random.Random(2)
        for _ in range(args.presses):
            shown = (shown + 1) % len(names)
            heading = names[shown] if shown == 0 else f"by {names[shown]}"
            keys.append(term.press(b"o", shows(f"servers, {heading} ·"), "o"))
            term.idle(rng.uniform(0.15, 0.45))
        term.quit()
    except BaseException:
        term.kill()
        raise
    return shares, keys


def readings(url: str, count: int) -> tuple[float, float]:
    """The Prometheus side alone, in this process: `count` readings (every family's query,
    the rows, their order); CPU and wall seconds of one, mean."""
    import asyncio

    from specmon.session.prometheus_fleet import PrometheusFleet

    async def run() -> tuple[float, float]:
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            fleet = PrometheusFleet(client, url)
            await fleet.read()  # connections made, caches warm
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(count):
                await fleet.read()
            return (time.process_time() - cpu) / count, (time.perf_counter() - wall) / count

    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=500)
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--window-s", type=float, default=20.0)
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument(
        "--readings-only",
        type=int,
        metavar="N",
        help="time N readings of the Prometheus side alone (no TUI) and stop",
    )
    parser.add_argument(
        "--probe-every",
        type=float,
        default=10.0,
        help="seconds between a synthetic target's probes (its figures change then; 0.001: "
        "every figure changes at every scrape)",
    )
    parser.add_argument(
        "--before", metavar="REF", help="also run this commit's specmon, alternating"
    )
    parser.add_argument("--rounds", type=int, default=1, help="alternations with --before")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the results here too")
    args = parser.parse_args()
    if not Path(PROMETHEUS).exists():
        print(f"{PROMETHEUS} is missing: apt-get install prometheus", file=sys.stderr)
        return 2
    with (
        tempfile.TemporaryDirectory(prefix="prom-fleet-") as tmp,
        prometheus(args.servers, Path(tmp), args.probe_every) as url,
    ):
        if args.readings_only:
            cpu, wall = readings(url, args.readings_only)
            print(
                f"| {args.servers} servers | one reading: {cpu * 1000:.0f} ms CPU, "
                f"{wall * 1000:.0f} ms wall |"
            )
            return 0
        codes: dict[str, str | None] = {"after": None}
        if args.before:
            codes = {"before": archived(args.before, Path(tmp) / "before"), "after": None}
        results: dict[str, dict[str, list[float]]] = {
            which: {"cpu_shares": [], "o_key_s": [], "load1": []} for which in codes
        }
        for _ in range(args.rounds if args.before else 1):
            for which, code in codes.items():
                shares, keys = measure(args, url, tmp, code)
                results[which]["cpu_shares"] += shares
                results[which]["o_key_s"] += keys
                results[which]["load1"].append(os.getloadavg()[0])
                print(line(args, which, shares, keys), flush=True)
    medians = {w: statistics.median(r["cpu_shares"]) for w, r in results.items()}
    for which, got in results.items():
        print(line(args, f"{which}, all", got["cpu_shares"], got["o_key_s"]))
    if args.before:
        print(f"after/before TUI CPU: {medians['after'] / medians['before']:.2f}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "command": " ".join(sys.argv),
                    "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "after": commit(),
                    "before": args.before,
                    "servers": args.servers,
                    "probe_every_s": args.probe_every,
                    "results": results,
                    "median_cpu_share": medians,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


def line(args: argparse.Namespace, which: str, shares: list[float], keys: list[float]) -> str:
    """The Markdown line of one run's medians, with the load average now."""
    return (
        f"| {args.servers} servers through Prometheus, probes every {args.probe_every:g} s "
        f"| {which} | TUI CPU "
        f"{statistics.median(shares) * 100:.1f}% of a core (windows: "
        f"{', '.join(f'{s * 100:.1f}' for s in shares)}) | `o` key "
        f"{statistics.median(keys) * 1000:.0f} ms median, {max(keys) * 1000:.0f} ms max "
        f"({len(keys)} presses) | load {os.getloadavg()[0]:.2f} |"
    )


if __name__ == "__main__":
    sys.exit(main())
