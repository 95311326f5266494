"""`specmon demo`: a speculative and a baseline simulated SGLang server, benched and compared."""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.bench import Progress, run_bench
from specmon.cli.common import positive_int, tokens
from specmon.exports import compare_text
from specmon.model import Protocol, Snapshot
from specmon.render import run_line, target_line
from specmon.sim import SimConfig, SimServer
from specmon.sources.backend import connect
from specmon.sources.http import Target, make_client
from specmon.sources.probe import DEFAULT_PROMPT
from specmon.store import Store


def register(commands: Any) -> None:
    """Add the `demo` subcommand."""
    demo = commands.add_parser(
        "demo",
        help="run a speculative and a baseline simulated SGLang server and compare them",
        allow_abbrev=False,
    )
    demo.add_argument("--runs", type=positive_int, default=3, help="timed runs (default 3)")
    demo.add_argument("--max-tokens", type=tokens, default=200, help="tokens per run (default 200)")
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Start both simulators, bench each, print the comparison."""
    return asyncio.run(_demo(args))


async def _demo(args: argparse.Namespace) -> int:
    spec_config = SimConfig()
    base_config = replace(
        spec_config,
        speculative_algorithm=None,
        speculative_num_steps=None,
        speculative_eagle_topk=None,
        speculative_num_draft_tokens=None,
        speculative_draft_model_path=None,
    )
    protocol = Protocol(args.runs, 1, args.max_tokens, 0.0, DEFAULT_PROMPT)
    print("specmon demo: two simulated SGLang servers, the same flags but for speculation.")
    print("The live dashboard replaces this walk-through in a later release.\n")
    servers = [SimServer(base_config), SimServer(spec_config)]
    snapshots: list[Snapshot] = []
    with TemporaryDirectory(prefix="specmon-demo-") as tmp, Store(Path(tmp) / "demo.db") as store:
        try:
            for server in servers:
                await server.start()
            for server in servers:
                target = Target(url=server.url)
                async with make_client(target) as client:
                    backend, info = await connect(client)
                    print(f"{server.url}: {target_line(info)}")

                    def progress(p: Progress) -> None:
                        phase = "Warm-up" if p.phase == "warmup" else "Run"
                        print("  " + run_line(p.index, p.total, p.figures, phase), flush=True)

                    snapshot = await run_bench(
                        client, backend, target.url, info, protocol, on_progress=progress
                    )
                snapshots.append(store.get(store.save(snapshot)))
                print()
        finally:
            for server in servers:
                await server.stop()
        print(compare_text(snapshots[0], snapshots[1], now=time.time(),
                           max_age_s=DEFAULT_MAX_AGE_S))  # fmt: skip
    print("\nNext: `specmon bench URL` against your own server, `specmon check URL` for triage.")
    return 0
