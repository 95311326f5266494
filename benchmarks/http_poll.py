"""CPU of one poll (`http.get` of /metrics and of server info) and of one live probe's stream
through each transport.

The dashboard GETs /metrics every second and server info every 5 s for as long as it runs, and
streams a 256-token probe every 10 s; this times `specmon.sources.http.get` and the probe
(`Connection.probe`, SGLang's `/generate` stream) over httpx's own transport (httpcore, h11,
anyio) and through the polling client (aiohttp), against the simulator on loopback (in a thread
of this process: the figure is the calling thread's CPU, `time.thread_time`, so the server's
work is left out).

    python benchmarks/http_poll.py --requests 1000 --rounds 3

Prints a Markdown table for docs/performance.md (median over rounds, ms of CPU per request; a
probe is one request, with its stream events counted beside it).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import httpx

from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.sim import SimConfig, SimThread
from specmon.sources.backends import Connection
from specmon.sources.http import get, make_client, polling_client
from specmon.target import Target

PATHS = ("/metrics", "/get_server_info")
PROBE = "/generate (probe, 256 tokens)"
PROBES = 10  # per round: a probe streams for ~3 s


async def per_request_ms(client: httpx.AsyncClient, path: str, requests: int) -> float:
    """Thread CPU per `get` of `path`, after one untimed request opens the connection."""
    await get(client, path)
    start = time.thread_time()
    for _ in range(requests):
        await get(client, path)
    return 1000 * (time.thread_time() - start) / requests


async def per_probe_ms(client: httpx.AsyncClient, probes: int) -> tuple[float, float]:
    """Thread CPU per live probe (the dashboard's 256 tokens), after an untimed one; and its
    stream events (chunks) on average."""
    connection = Connection(client)
    await connection.probe(prompt=DEFAULT_PROMPT, max_tokens=256)
    start, events = time.thread_time(), 0
    for _ in range(probes):
        events += len((await connection.probe(prompt=DEFAULT_PROMPT, max_tokens=256)).chunks)
    return 1000 * (time.thread_time() - start) / probes, events / probes


async def measure(url: str, requests: int, rounds: int) -> dict[tuple[str, str], list[float]]:
    """Every (transport, path) over `rounds`, alternating transports within each round."""
    target = Target(url)
    results: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        clients = (("httpx (httpcore)", make_client), ("polling client (aiohttp)", polling_client))
        for name, make in clients:
            async with make(target) as client:
                for path in PATHS:
                    ms = await per_request_ms(client, path, requests)
                    results.setdefault((name, path), []).append(ms)
                ms, events = await per_probe_ms(client, PROBES)
                results.setdefault((name, PROBE), []).append(ms)
                results.setdefault((name, "events"), []).append(events)
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
        if path == "events":
            continue
        rounds = ", ".join(f"{v:.3f}" for v in values)
        median = statistics.median(values)
        per_event = ""
        if path == PROBE:
            events = statistics.median(results[(name, "events")])
            per_event = f" ({1000 * median / events:.0f} µs per event of {events:.0f})"
        print(f"| {name} | {path} | {median:.3f}{per_event} | {rounds} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
