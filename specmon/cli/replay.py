"""`specmon replay FILE [--speed 10] [--start 5m]`: the dashboard of a recorded session."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from specmon.cli import monitor
from specmon.cli.crash import run_dashboard
from specmon.cli.record import span
from specmon.config import SETTINGS
from specmon.errors import TargetError
from specmon.session.recording import read_recording
from specmon.session.replay import SPEEDS, ReplayFeed, replay_session
from specmon.wording import duration


def speed(text: str) -> float:
    """Times the recorded pace (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a speed: {text!r} (e.g. 10)") from None
    if not SPEEDS[0] <= value <= SPEEDS[-1]:
        raise argparse.ArgumentTypeError(
            f"must be between {SPEEDS[0]:g} and {SPEEDS[-1]:g}: {text}"
        )
    return value


def register(commands: Any) -> None:
    """Add the `replay` subcommand."""
    replay = commands.add_parser(
        "replay",
        help="the dashboard of a session recorded by specmon record or --record",
        description="Opens the live dashboard on a recording instead of a server: the same "
        "panels, built from the recorded inputs at the recorded pace. Keys: space or p pauses, "
        "← → seek 10 s (shift: 1 min), + - change the speed; b and s are off (they act on a "
        "server). Nothing is sent to any server.",
        allow_abbrev=False,
    )
    replay.add_argument("file", metavar="FILE", help="a recording")
    replay.add_argument(
        "--speed",
        type=speed,
        default=1.0,
        metavar="X",
        help=f"times the recorded pace (default 1; {SPEEDS[0]:g} to {SPEEDS[-1]:g})",
    )
    replay.add_argument(
        "--start",
        type=span,
        default=0.0,
        metavar="TIME",
        help="start this far into the recording, e.g. 90s, 5m",
    )
    replay.add_argument("--theme", help=SETTINGS["theme"][1])
    replay.add_argument("--dumps", metavar="DIR", help=SETTINGS["dumps"][1])
    replay.add_argument(
        "--config", metavar="PATH", help="TOML settings file (its theme and dumps folder)"
    )
    replay.set_defaults(run=run, dashboard=True)


def run(args: argparse.Namespace) -> int:
    """Read the recording (one-line errors), then open its dashboard."""
    recording = read_recording(Path(args.file))
    if not recording.entries:
        raise TargetError(f"{args.file} holds no inputs: nothing to replay")
    if args.start > recording.duration:
        raise TargetError(
            f"--start {duration(args.start)} is past the end of {args.file} "
            f"({duration(recording.duration)} recorded)"
        )
    if recording.cut_note is not None:  # said before the screen opens, and left there after
        print(f"specmon: warning: {args.file}: {recording.cut_note}", file=sys.stderr)
    from specmon.ui.replay_app import ReplayApp  # Textual loads only for the dashboard

    config = recording.header.config(monitor.dashboard_config(args))
    feed = ReplayFeed(recording, speed=args.speed, start=args.start)
    return run_dashboard(ReplayApp(replay_session(config, feed)))
