"""`specmon launch [options] -- <server command>`: launch the speculative server, open the
dashboard on it; `b` relaunches it without speculation for the baseline, then with it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from specmon.cli import monitor, stopping
from specmon.cli.ab_report import split_lines
from specmon.cli.common import add_connection, add_db, seconds, takes
from specmon.cli.crash import run_dashboard
from specmon.launch.ab import DEFAULT_HEALTH_TIMEOUT_S, url_for
from specmon.launch.relaunch import ManagedServer
from specmon.session.server_session import dashboard_session


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
        "the speculative server comes back either way. Takes the dashboard's settings "
        "(--probe-every, --theme, …) before or after `launch`, as flags, SPECMON_* variables or "
        "the config file; only its server is the one launched.",
        allow_abbrev=False,
    )
    add_launch_options(launch)
    add_server_command(launch)
    add_db(launch, config=False)  # its --config is the dashboard's, below
    # The dashboard's: unset here, so that the environment and the config file can set them.
    settings = monitor.add_settings(
        launch, "live dashboard (before or after `launch`; also SPECMON_* or the config file)"
    )
    dashboard = [*add_connection(launch, defaults=False), *settings]
    takes(launch, **{action.dest: None for action in dashboard})
    launch.set_defaults(run=run, dashboard=True)


def add_server_command(parser: argparse.ArgumentParser) -> None:
    """The server command after `--` (`ab`, `launch`), as `args.server_command`."""
    parser.add_argument(
        "server_command",
        metavar="command",
        nargs=argparse.REMAINDER,
        help="the speculative server's command, after --",
    )


def run(args: argparse.Namespace) -> int:
    """Launch the server, run the dashboard on it, stop the server when it quits."""
    from specmon.cli.ab import split_of  # `ab --watch` comes here: no import cycle at load
    from specmon.ui.app import SpecmonApp  # Textual loads only for the dashboard

    split = split_of(args)
    for line in split_lines(split):
        print(line)
    config = monitor.dashboard_config(args, launched=url_for(split))
    targets = monitor.targets_of(config)
    logs = Path(args.logs).expanduser() if args.logs else None
    managed = ManagedServer(split, targets.server, args.health_timeout, logs)
    try:
        # The dashboard takes SIGTERM in its own loop; until it runs, they stop the launch.
        with stopping.stopped_by_signals():
            stopping.run(managed.start(say=lambda line: print(line, flush=True)))
        store = monitor.open_store_or_warn(config.db)
        try:
            session = dashboard_session(config, targets, store, managed=managed)
            return run_dashboard(SpecmonApp(session))
        finally:
            if store is not None:
                store.close()
    finally:
        managed.stop()
