"""`specmon demo`: the live dashboard against a speculative and a baseline simulated server.

The DESIGN.md §1 scenario: plain decode at 62.9 tok/s; EAGLE3 with 2 steps and 3 draft tokens at
about 27.6 ms per draft+verify cycle and an accept length near 2.1. The baseline is taken at start.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from specmon.cli.common import seconds, tokens
from specmon.config import MonitorConfig, Targets
from specmon.sources.http import Target
from specmon.store import Store


def register(commands: Any) -> None:
    """Add the `demo` subcommand."""
    demo = commands.add_parser(
        "demo",
        help="the live dashboard against a speculative and a baseline simulated SGLang server",
        description="Starts two simulated SGLang servers on loopback (the same flags but for "
        "speculation), opens the dashboard on the speculative one with the other as the "
        "baseline server, and takes a baseline at once. Snapshots go to a temporary store.",
        allow_abbrev=False,
    )
    demo.add_argument("--probe-every", type=seconds, default=3.0, metavar="S",
                      help="seconds between probes (default 3)")  # fmt: skip
    demo.add_argument("--probe-tokens", type=tokens, default=128, metavar="N",
                      help="tokens per probe and baseline run (default 128)")  # fmt: skip
    demo.add_argument("--theme", default="specmon-dark", help="colour theme")
    demo.set_defaults(run=run, dashboard=True)


def run(args: argparse.Namespace) -> int:
    """Start both simulators and open the dashboard; everything stops when it quits."""
    # Imported here: every command would pay for them at start (aiohttp alone takes ~150 ms).
    from specmon.sim import SimConfig, SimThread
    from specmon.ui.app import SpecmonApp

    spec_config = SimConfig()
    with (
        SimThread(spec_config) as spec,
        SimThread(replace(spec_config, speculative_algorithm=None)) as base,
        tempfile.TemporaryDirectory(prefix="specmon-demo-") as tmp,
        Store(Path(tmp) / "demo.db") as store,
    ):
        config = MonitorConfig(
            url=spec.url,
            baseline_url=base.url,
            probe_every=args.probe_every,
            probe_tokens=args.probe_tokens,
            baseline_runs=3,
            theme=args.theme,
        )
        targets = Targets(Target(spec.url), Target(base.url))
        SpecmonApp(config, targets, store, auto_baseline=True).run()
    return 0
