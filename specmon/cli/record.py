"""`specmon record [URL] --out FILE [--duration 10m]`: record what the dashboard would see,
headless, for `specmon replay FILE` (an incident review, a bug report)."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from specmon.cli import monitor
from specmon.cli.common import positive_int, takes
from specmon.errors import TargetError
from specmon.session.feed import LocalFeed
from specmon.session.recorder import RecordingSink
from specmon.session.recording import DEFAULT_MAX_BYTES, Header, RecordingWriter
from specmon.wording import duration

MB = 1024 * 1024
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smh]?)")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600}


def span(text: str) -> float:
    """A length of time: seconds, or with a unit, e.g. 90, 90s, 10m, 1.5h (argparse type)."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or float(match[1]) <= 0:
        raise argparse.ArgumentTypeError(f"not a length of time: {text!r} (e.g. 90s, 10m, 2h)")
    return float(match[1]) * _UNIT_S[match[2]]


def add_record_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The size cap, shared by `record` and the dashboard's `--record`."""
    parser.add_argument(
        "--max-size",
        type=positive_int,
        metavar="MB",
        default=DEFAULT_MAX_BYTES // MB,
        help="stop recording when the file reaches this size (default "
        f"{DEFAULT_MAX_BYTES // MB}; the file then ends saying so, and "
        "replays up to there)",
    )


def add_force(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--force`, shared by `record` and the dashboard's `--record`."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace the recording FILE if it exists (default: refuse it, exit 2: a recording "
        "may be an incident's only evidence)",
    )


def new_recording(
    path: Path, header: Header, *, force: bool, max_bytes: int = DEFAULT_MAX_BYTES
) -> RecordingWriter:
    """The writer of a new recording at `path`.

    Raises:
        TargetError: `path` exists (a link too) and `force` is not given: nothing was written.
        RecordingError: It cannot be created, or its first line written (a full disk).
    """
    if not force and os.path.lexists(path):
        raise TargetError(
            f"{path} exists: pass --force to replace it, or record to another file "
            "(a recording may be an incident's only evidence)"
        )
    return RecordingWriter(path, header, max_bytes=max_bytes, replace=force)


def register(commands: Any) -> None:
    """Add the `record` subcommand."""
    record = commands.add_parser(
        "record",
        help="record what the dashboard sees (samples, probes, telemetry) for specmon replay",
        description="Samples and probes the server as the dashboard does, without a screen, "
        "and writes every input to FILE as it comes (JSON Lines, owner-only, no API key): "
        "`specmon replay FILE` shows the dashboard as it was. Stops after --duration, at the "
        "size cap, or on Ctrl-C; the file is complete up to then. Takes the dashboard's "
        "options (--interval, --probe-every, --no-probe, --gpu-metrics, …).",
        allow_abbrev=False,
    )
    record.add_argument(
        "server", metavar="URL", nargs="?", help="server address (or --url, --host/--port)"
    )
    dashboard = monitor.add_arguments(record, command=True, theme=False)
    takes(record, **{action.dest: None for action in dashboard})
    group = record.add_argument_group("record")
    group.add_argument(
        "--out",
        metavar="FILE",
        required=True,
        help="the recording to write: a new file (one that exists is refused unless --force)",
    )
    add_force(group)
    group.add_argument(
        "--duration",
        type=span,
        metavar="TIME",
        help="stop after this long, e.g. 90s, 10m, 2h (default: until Ctrl-C)",
    )
    add_record_options(group)
    record.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Record until the duration ends, the size cap is reached or Ctrl-C; say what was written."""
    if args.server is not None:
        if args.url or args.host is not None or args.port is not None:
            raise TargetError("give the server once: URL, --url or --host/--port")
        args.url = [args.server]
    config = monitor.config_from_args(args)
    if config.fleet:
        raise TargetError("specmon record watches one server; record each in its own file")
    targets = monitor.targets_of(config)
    header = Header.of(config, time.time())
    writer = new_recording(
        Path(args.out).expanduser(), header, force=args.force, max_bytes=args.max_size * MB
    )
    print(f"specmon record: recording {config.url} to {args.out}; Ctrl-C stops", file=sys.stderr)
    feed = LocalFeed(config, targets, None)
    started = time.monotonic()
    try:
        asyncio.run(_record(feed, writer, args.duration))
    except KeyboardInterrupt:
        pass  # the file is whole up to the last input: what Ctrl-C asks for
    finally:
        writer.close()
    took = duration(time.monotonic() - started)
    why = f" (stopped: {writer.stopped})" if writer.stopped else ""
    print(
        f"specmon record: {took} recorded, {writer.written / MB:.1f} MB in {args.out}{why}; "
        f"replay it: specmon replay {args.out}",
        file=sys.stderr,
    )
    return 1 if writer.stopped and not writer.full else 0


async def _record(feed: LocalFeed, writer: RecordingWriter, seconds: float | None) -> None:
    """Run the feed into the recording until `seconds` pass or the writer stops."""
    task = asyncio.create_task(feed.run(RecordingSink(writer)))
    deadline = None if seconds is None else time.monotonic() + seconds
    try:
        while writer.stopped is None and not task.done():
            left = 1.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.sleep(min(left, 1.0))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    if task.done() and not task.cancelled() and task.exception() is not None:
        raise task.exception()  # type: ignore[misc]
