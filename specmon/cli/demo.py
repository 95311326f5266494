"""`specmon demo`: the live dashboard against a speculative and a baseline simulated server.

The docs/design.md §1 scenario, with numbers that agree (`SimConfig`'s defaults): plain
decode at 62.9 tok/s (15.9 ms/token); EAGLE3 with 2 steps and 3 draft tokens at 27.6 ms per
draft+verify cycle and an accept length near 2.1, so about 76.1 tok/s (13.1 ms/token), +21%, with
a break-even accept length of 1.74. The baseline is taken at start.
"""

from __future__ import annotations

import argparse
import tempfile
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from specmon.cli.common import open_store, setting, takes
from specmon.cli.crash import run_dashboard
from specmon.cli.monitor import check_theme
from specmon.config import MonitorConfig, Targets
from specmon.probe_prompts import DEFAULT_MAX_TOKENS
from specmon.session.server_session import dashboard_session
from specmon.storage.store import Store
from specmon.target import Target


def register(commands: Any) -> None:
    """Add the `demo` subcommand."""
    demo = commands.add_parser(
        "demo",
        help="the live dashboard against a speculative and a baseline simulated SGLang server",
        description="Starts two simulated SGLang servers on loopback (the same flags but for "
        "speculation): plain decode 62.9 tok/s; EAGLE3 at 27.6 ms per cycle and accept length "
        "2.1, about 76.1 tok/s (+21%, break-even 1.74). Opens the dashboard on the speculative "
        "one with the other as the baseline server, and takes a baseline at once. Snapshots go "
        "to a temporary store, gone on exit, unless --db names one.",
        allow_abbrev=False,
    )
    demo.add_argument(
        "--probe-every",
        type=setting("probe_every"),
        default=argparse.SUPPRESS,
        metavar="S",
        help="seconds between probes (default 3)",
    )
    demo.add_argument(
        "--probe-tokens",
        type=setting("probe_tokens"),
        default=argparse.SUPPRESS,
        metavar="N",
        help=f"tokens per probe and baseline run (default {DEFAULT_MAX_TOKENS}, as everywhere)",
    )
    demo.add_argument(
        "--theme", default=argparse.SUPPRESS, help="colour theme (default specmon-dark)"
    )
    demo.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="keep the snapshots in this store (default: a temporary one, gone on exit)",
    )
    demo.set_defaults(run=run, dashboard=True)
    takes(demo, probe_every=3.0, probe_tokens=DEFAULT_MAX_TOKENS, theme="specmon-dark", db=None)


TEMPORARY_STORE = "demo store: gone on exit; use --db PATH to keep"
"""Said with each snapshot the demo saves into its temporary store."""


def open_demo_store(args: argparse.Namespace, stack: ExitStack) -> tuple[Store, str]:
    """The store --db names, else a temporary one; with what to say of a snapshot saved there."""
    if args.db:
        return stack.enter_context(open_store(args)), ""
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="specmon-demo-"))
    return stack.enter_context(Store(Path(folder) / "demo.db")), TEMPORARY_STORE


def run(args: argparse.Namespace) -> int:
    """Start both simulators and open the dashboard; everything stops when it quits."""
    # Imported here: every command would pay for them at start (aiohttp alone takes ~150 ms).
    from specmon.sim import SimConfig, SimThread
    from specmon.ui.app import SpecmonApp

    check_theme(args.theme)
    spec_config = SimConfig()
    with ExitStack() as stack:
        store, store_note = open_demo_store(args, stack)
        spec = stack.enter_context(SimThread(spec_config))
        base = stack.enter_context(SimThread(replace(spec_config, speculative_algorithm=None)))
        config = MonitorConfig(
            url=spec.url,
            baseline_url=base.url,
            probe_every=args.probe_every,
            probe_tokens=args.probe_tokens,
            baseline_runs=3,
            theme=args.theme,
        )
        targets = Targets(Target(spec.url), Target(base.url))
        session = dashboard_session(
            config, targets, store, auto_baseline=True, store_note=store_note
        )
        return run_dashboard(SpecmonApp(session))
