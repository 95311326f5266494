"""How soon `specmon exporter` stops serving what no longer holds, against the
simulator: a speculative server and its plain twin as baseline server, the exporter with
`--take-baselines` at the given cadences. Once the speedup and a valid baseline are served, the
baseline server is stopped (seconds until `specmon_baseline_state{state="unverified"}` is 1),
then the target (seconds until its speedup, its probe decode tok/s and its baseline state are no
longer served), at a random phase of the probe cadence. Scrapes every 0.1 s measure the
moment; the figures are wall seconds.

    python benchmarks/exporter_withdrawal.py --rounds 3                  # the defaults: 1 s, 10 s
    python benchmarks/exporter_withdrawal.py --interval 2 --probe-every 30

Prints a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import httpx
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from specmon.config import FleetTarget, MonitorConfig
from specmon.exporter.server import Exporter
from specmon.session.fleet import Fleet
from specmon.session.server_session import ServerSession
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store
from specmon.target import Target

SPEC = SimConfig(plain_step_ms=10.0, cycle_ms=20.0, accept_length=3.0, ttft_ms=10.0, seed=7)
SCRAPE_EVERY_S = 0.1
LIMIT_S = 300.0
MEASURES = (
    "baseline server stopped → state unverified",
    "target stopped → no speedup",
    "target stopped → no probe decode tok/s",
    "target stopped → no baseline state",
)

Families = dict[str, Metric]


def _serves(families: Families, name: str, target: str, state: str | None = None) -> bool:
    """Whether `name` has a sample for `target` (with `state`: that state's sample reads 1)."""
    return any(
        s.labels.get("target") == target
        and (state is None or (s.labels.get("state") == state and s.value == 1))
        for s in families[name].samples
    )


async def _until(
    scrape: Callable[[], Awaitable[Families]], done: Callable[[Families], bool], what: str
) -> float:
    """Seconds until a scrape shows `done`."""
    start = time.monotonic()
    while not done(await scrape()):
        if time.monotonic() - start > LIMIT_S:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(SCRAPE_EVERY_S)
    return time.monotonic() - start


async def one_round(config: MonitorConfig, phase: float) -> dict[str, float]:
    """One measurement of each of `MEASURES`; the target is stopped `phase` (0-1) of a probe
    period after the baseline turned unverified."""
    plain_config = replace(SPEC, speculative_algorithm=None)
    with (
        SimThread(SPEC) as spec,
        SimThread(plain_config) as plain,
        tempfile.TemporaryDirectory() as tmp,
        Store(Path(tmp) / "withdrawal.db") as store,
    ):
        url = spec.url
        session = ServerSession.of_target(
            FleetTarget(url, plain.url), Target(url), config, store, take_baselines=True
        )
        fleet = Fleet([session])
        exporter = Exporter(fleet, "127.0.0.1", 0)
        await exporter.start()
        task = asyncio.create_task(fleet.run())
        try:
            async with httpx.AsyncClient(base_url=exporter.url, timeout=10) as client:

                async def scrape() -> Families:
                    text = (await client.get("/metrics")).text
                    return {f.name: f for f in text_string_to_metric_families(text)}

                await _until(
                    scrape,
                    lambda f: (
                        _serves(f, "specmon_speedup_ratio", url)
                        and _serves(f, "specmon_baseline_state", url, "valid")
                    ),
                    "a speedup against a valid baseline",
                )
                plain.call(plain.server.stop)
                unverified = await _until(
                    scrape,
                    lambda f: _serves(f, "specmon_baseline_state", url, "unverified"),
                    "the baseline unverified",
                )
                # At a random phase of the probe cadence: the samplers' and the probe loop's
                # ticks line up with the moment the state turned, and a probe may be in flight.
                await asyncio.sleep(phase * config.probe_every)
                spec.call(spec.server.stop)
                start = time.monotonic()
                gone: dict[str, float] = {}
                names = dict(
                    zip(
                        MEASURES[1:],
                        (
                            "specmon_speedup_ratio",
                            "specmon_probe_decode_tokens_per_second",
                            "specmon_baseline_state",
                        ),
                        strict=True,
                    )
                )
                while len(gone) < len(names):
                    families = await scrape()
                    for measure, name in names.items():
                        if measure not in gone and not _serves(families, name, url):
                            gone[measure] = time.monotonic() - start
                    if time.monotonic() - start > LIMIT_S:
                        raise SystemExit(f"timed out; gone so far: {gone}")
                    await asyncio.sleep(SCRAPE_EVERY_S)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await exporter.stop()
    return {MEASURES[0]: unverified, **gone}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=float, default=1.0, help="sampling (default 1 s)")
    parser.add_argument("--probe-every", type=float, default=10.0, help="default 10 s")
    parser.add_argument("--seed", type=int, default=1, help="of the stopping phases")
    args = parser.parse_args()
    config = MonitorConfig(
        url="http://unused",
        interval=args.interval,
        probe_every=args.probe_every,
        probe_tokens=64,
        baseline_runs=3,
    )
    phases = random.Random(args.seed).random
    rounds = [asyncio.run(one_round(config, phases())) for _ in range(args.rounds)]
    print(
        f"--interval {args.interval:g} --probe-every {args.probe_every:g}, {args.rounds} rounds\n"
    )
    print("| event | seconds, median | min–max |\n|---|---|---|")
    for measure in MEASURES:
        values = [r[measure] for r in rounds]
        print(
            f"| {measure} | {statistics.median(values):.1f} | {min(values):.1f}–{max(values):.1f} |"
        )


if __name__ == "__main__":
    main()
