"""`specmon launch [options] -- <server command>`: launch the speculative server, open the
dashboard on it; `b` relaunches it without speculation for the baseline, then with it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from specmon.cli import stopping
from specmon.cli.ab_report import split_lines
from specmon.cli.common import add_connection, add_db, seconds, target_of
from specmon.cli.monitor import open_store_or_warn, targets_of
from specmon.config import load_config
from specmon.launch.ab import DEFAULT_HEALTH_TIMEOUT_S
from specmon.launch.ab import target_for as launched_target
from specmon.session.relaunch import ManagedServer


def add_launch_options(parser: argparse.ArgumentParser) -> None:
    """--health-timeout and --logs: how servers specmon launches are started (`ab`, `launch`)."""
    parser.add_argument(
        "--health-timeout",
        type=seconds,
        default=DEFAULT_HEALTH_TIMEOUT_S,
        metavar="S",
        help=f"seconds a server may take to come up (default {DEFAULT_HEALTH_TIMEOUT_S:g})",
    )
    parser.add_argument("--logs", metavar="DIR", help="the servers' logs (default: a temp folder)")


def register(commands: Any) -> None:
    """Add the `launch` subcommand."""
    launch = commands.add_parser(
        "launch",
        help="launch a speculative server and open the dashboard on it (b: a relaunched baseline)",
        description="Launches the server command (in its own process group), opens the live "
        "dashboard on it, and stops it when the dashboard quits. Its `b` relaunches the server "
        "without its speculative flags (the settings SGLang changes for speculation pinned, as "
        "`specmon ab` does), takes the baseline, and relaunches it with them; Esc cancels, and "
        "the speculative server comes back either way.",
        allow_abbrev=False,
    )
    add_launch_options(launch)
    launch.add_argument(
        "command", nargs=argparse.REMAINDER, help="the speculative server's command, after --"
    )
    add_db(launch)
    add_connection(launch)
    launch.set_defaults(run=run, dashboard=True)


def run(args: argparse.Namespace) -> int:
    """Launch the server, run the dashboard on it, stop the server when it quits."""
    from specmon.cli.ab import split_of  # `ab --watch` comes here: no import cycle at load
    from specmon.ui.app import SpecmonApp  # Textual loads only for the dashboard

    split = split_of(args)
    for line in split_lines(split):
        print(line)
    target = launched_target(split, target_of(args, "http://127.0.0.1"))
    logs = Path(args.logs).expanduser() if args.logs else None
    managed = ManagedServer(split, target, args.health_timeout, logs)
    config = load_config({"url": target.url, "db": args.db})
    try:
        # The dashboard takes SIGTERM in its own loop; until it runs, they stop the launch.
        with stopping.stopped_by_signals():
            stopping.run(managed.start(say=lambda line: print(line, flush=True)))
        store = open_store_or_warn(config.db)
        try:
            SpecmonApp(config, targets_of(config), store, managed=managed).run()
        finally:
            if store is not None:
                store.close()
    finally:
        managed.stop()
    return 0
