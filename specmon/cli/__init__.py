"""Command line: `specmon bench|check|whatif|ab|launch|snapshots|exporter|demo|agent|web`,
one module per command.

Every failure prints one line naming its cause (never a traceback) and exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from contextlib import nullcontext

from specmon import __version__
from specmon.backend_facts import known
from specmon.cli import (
    ab,
    agent,
    bench,
    check,
    demo,
    exporter,
    history,
    launch,
    monitor,
    record,
    replay,
    snapshots,
    web,
    whatif,
)
from specmon.cli.common import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE, apply_shared
from specmon.cli.parsing import Parser, addresses_as_urls, note_api_paths
from specmon.cli.stopping import stopped_by_signals
from specmon.config import DEFAULT_HOST, DEFAULT_PORT
from specmon.errors import SpecmonError, TargetError
from specmon.storage.store import StoreError

COMMANDS = (
    bench,
    check,
    whatif,
    ab,
    launch,
    snapshots,
    history,
    exporter,
    demo,
    agent,
    web,
    record,
    replay,
)


_KINDS = ", ".join(f.display for f in known().values())
_PORTS = ", ".join(
    f"{f.display}'s {f.default_port}" for f in known().values() if f.default_port != DEFAULT_PORT
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = Parser(
        prog="specmon",
        description=f"Live monitor for speculative-decoding LLM servers ({_KINDS}). Without a "
        "command, opens the live dashboard on the server "
        f"at --host/--port, default {DEFAULT_HOST}:{DEFAULT_PORT} (SGLang's default port; "
        f"{_PORTS}): specmon --host 10.1.230.174 --port 8000. With several "
        "servers (--url A --url B, or [[targets]] in the config file) it opens the fleet table: "
        "one row per server, worst first; Enter opens one, Esc comes back",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"specmon {__version__}")
    top_level = monitor.add_arguments(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", prog="specmon")
    for command in COMMANDS:
        command.register(commands)
    parser.set_defaults(top_level=top_level)
    # Set after the commands' parsers took their prog from the default one. The command is
    # optional: without one (or with a server's address first) it is the dashboard.
    parser.usage = "specmon [options] [URL | COMMAND ...]"
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line, with the defaults of the options a command shares filled in.

    Exits with status 2 and the usage on bad arguments (argparse's way).
    """
    parser = build_parser()
    argv = addresses_as_urls(parser, list(sys.argv[1:] if argv is None else argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's parser, with its usage (argparse's own: the top level's)
        command_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        args.run = monitor.run
        args.dashboard = True
    else:
        apply_shared(parser, args.top_level, args)
    note_api_paths(args)
    return args


def command_parser(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The parser of the command (and action, `snapshots list`) that `args` chose."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and getattr(args, action.dest, None):
            return command_parser(action.choices[getattr(args, action.dest)], args)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `specmon` script and `python -m specmon`."""
    args = parse_args(argv)
    # SIGTERM (and SIGHUP unless ignored) stop a headless command like Ctrl-C: cleanly,
    # nothing saved. The dashboard handles them in its own event loop (SpecmonApp.on_mount).
    dashboard = getattr(args, "dashboard", False)
    interrupted = getattr(args, "interrupted", "")
    try:
        with nullcontext() if dashboard else stopped_by_signals():
            code: int = args.run(args)
        sys.stdout.flush()  # a reader gone shows here, not as an error at the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader went away (`specmon snapshots list | head -4`): the rest is unwanted, as for a
        # program that SIGPIPE kills. Python's recipe: stdout onto devnull, so that the flush at
        # exit does not fail again (https://docs.python.org/3/library/signal.html#note-on-sigpipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        interrupted = getattr(args, "interrupted", "")  # `check` says what it had done
        print(f"\nspecmon: interrupted{': ' + interrupted if interrupted else ''}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except TargetError as exc:  # a bad address, key file or option: nothing was tried
        print(f"specmon: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SpecmonError as exc:
        suffix = f" ({interrupted})" if interrupted else ""
        print(f"specmon: error: {exc}{suffix}", file=sys.stderr)
        if isinstance(exc, StoreError) and hasattr(args, "store_exit"):
            return int(args.store_exit)  # `check`: its own code, apart from the server's
        return int(getattr(args, "failure_exit", 1))
