"""CPU of one poll (`http.get` of /metrics and of server info) through each transport.

The dashboard GETs /metrics every second and server info every 5 s for as long as it runs;
this times `specmon.sources.http.get` over httpx's own transport (httpcore, h11, anyio) and over
the polls' aiohttp transport, against the simulator on loopback (in a thread of this process:
the figure is the calling thread's CPU, `time.thread_time`, so the server's work is left out).

    python benchmarks/http_poll.py --requests 1000 --rounds 3

Prints a Markdown table for docs/performance.md (median over rounds, ms of CPU per request).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import httpx

from specmon.sim import SimConfig, SimThread
from specmon.sources.http import Target, get, make_client, polling_transport

PATHS = ("/metrics", "/get_server_info")


async def per_request_ms(client: httpx.AsyncClient, path: str, requests: int) -> float:
    """Thread CPU per `get` of `path`, after one untimed request opens the connection."""
    await get(client, path)
    start = time.thread_time()
    for _ in range(requests):
        await get(client, path)
    return 1000 * (time.thread_time() - start) / requests


async def measure(url: str, requests: int, rounds: int) -> dict[tuple[str, str], list[float]]:
    """Every (transport, path) over `rounds`, alternating transports within each round."""
    target = Target(url)
    results: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for name, transport in (("httpx (httpcore)", None), ("aiohttp", polling_transport(target))):
            async with make_client(target, transport=transport) as client:
                for path in PATHS:
                    ms = await per_request_ms(client, path, requests)
                    results.setdefault((name, path), []).append(ms)
    return results


def main() -> int:
    """Run and print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with SimThread(SimConfig(enable_metrics=True)) as sim:
        results = asyncio.run(measure(sim.url, args.requests, args.rounds))
    print("| transport | path | CPU ms per request (median) | rounds |")
    print("|---|---|---|---|")
    for (name, path), values in results.items():
        rounds = ", ".join(f"{v:.3f}" for v in values)
        print(f"| {name} | {path} | {statistics.median(values):.3f} | {rounds} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
