"""`specmon --once --json`: one dashboard frame as JSON on stdout, then exit (`htop -n`,
`nvitop --once`). The frame is every watched server's View (`session.once`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from specmon.cli.common import seconds
from specmon.config import MonitorConfig
from specmon.errors import TargetError
from specmon.session.once import WAITS_FOR, FrameSession, first_frame
from specmon.storage.store import Store
from specmon.target import Target

DEFAULT_ONCE_TIMEOUT_S = 30.0
EXIT_INCOMPLETE = 1
"""The frame was printed, but some server's figures had not come by the deadline."""


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """--once, --json and --once-timeout, on the dashboard's group of the top-level parser."""
    group.add_argument(
        "--once",
        action="store_true",
        help=f"print one dashboard frame (every server's figures) and exit; it waits for "
        f"{WAITS_FOR}, at most --once-timeout. Needs --json",
    )
    group.add_argument(
        "--json", dest="once_json", action="store_true", help="with --once: the frame as JSON"
    )
    group.add_argument(
        "--once-timeout",
        type=seconds,
        metavar="S",
        help=f"with --once: seconds to wait for the figures (default {DEFAULT_ONCE_TIMEOUT_S:g}); "
        f"past it the frame is printed as it stands and specmon exits {EXIT_INCOMPLETE}",
    )


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse --json or --once-timeout without --once, and --once without --json.

    Raises:
        TargetError: Naming the missing option.
    """
    if args.once and not args.once_json:
        raise TargetError("--once prints the frame as JSON: give --json too")
    if args.once_json and not args.once:
        raise TargetError("--json goes with --once (a command's --json comes after it)")
    if args.once_timeout is not None and not args.once:
        raise TargetError("--once-timeout goes with --once")


def run(config: MonitorConfig, server: Target, store: Store | None, timeout: float) -> int:
    """Print the frame of every server in `config` (a fleet or one), as JSON.

    Args:
        config: The merged configuration: its targets, cadences and probe size.
        server: How to reach a server (credentials, timeouts; each target's URL replaces it).
        store: Where baselines are looked up; None: none is.
        timeout: Seconds to wait for every server's figures.

    Returns:
        0 when every server's figures came in time, else EXIT_INCOMPLETE (said on stderr).
    """
    sessions = [
        FrameSession.of_target(target, server, config, store, probing=False)
        for target in config.targets
    ]
    frame = asyncio.run(first_frame(sessions, timeout))
    print(json.dumps(frame.to_dict(), indent=2, ensure_ascii=False))
    late = [label for label, ready, _ in frame.servers if not ready]
    if late:
        print(
            f"specmon: warning: no figures within {timeout:g} s from {', '.join(late)} "
            f"(waited for {WAITS_FOR}): the frame has what came",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE
    return 0
