"""What every command shares: argument types, connection options, the target and the store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from specmon.sources.http import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    Target,
    load_api_key,
    make_client,
    normalise_url,
)
from specmon.store import Store, default_db_path

__all__ = ["Target", "make_client", "normalise_url"]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def tokens(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError("need at least 2 tokens to measure decode speed")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0 and 3600 seconds: {text}")
    return value


class _RefuseApiKeyOnCommandLine(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.error(
            "--api-key is refused: a key on the command line shows in the process list. "
            f"Use {DEFAULT_API_KEY_ENV}=…, --api-key-env NAME or --api-key-file PATH"
        )


def add_connection(parser: argparse.ArgumentParser, *, layered: bool = False) -> None:
    """The options of every command that talks to a server.

    With `layered`, unset options stay None, so a config file or the environment can set them.
    """
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--api-key-env",
        metavar="NAME",
        help=f"environment variable holding the API key (default {DEFAULT_API_KEY_ENV})",
    )
    group.add_argument("--api-key-file", metavar="PATH", help="file holding the API key")
    group.add_argument(
        "--api-key", nargs="?", help=argparse.SUPPRESS, action=_RefuseApiKeyOnCommandLine
    )
    group.add_argument(
        "--insecure",
        action="store_true",
        default=None if layered else False,
        help="do not verify the server's TLS certificate",
    )
    group.add_argument(
        "--connect-timeout",
        type=seconds,
        default=None if layered else DEFAULT_CONNECT_TIMEOUT,
        metavar="S",
        help=f"seconds to wait for a connection (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    group.add_argument(
        "--read-timeout",
        type=seconds,
        default=None if layered else DEFAULT_READ_TIMEOUT,
        metavar="S",
        help=f"seconds to wait for each read; a whole answer gets twice this "
        f"(default {DEFAULT_READ_TIMEOUT:g})",
    )


def add_db(parser: argparse.ArgumentParser) -> None:
    """The --db option."""
    parser.add_argument(
        "--db", metavar="PATH", help=f"snapshot store (default {default_db_path()})"
    )


def target_of(args: argparse.Namespace, url: str | None = None) -> Target:
    """The target of a headless command, from its URL (or `url`) and connection options."""
    key, warnings = load_api_key(args.api_key_env, args.api_key_file)
    for warning in warnings:
        print(f"specmon: warning: {warning}", file=sys.stderr)
    if args.insecure:
        print("specmon: warning: TLS verification is off (--insecure)", file=sys.stderr)
    return Target(
        url=normalise_url(url or args.url),
        api_key=key,
        connect_timeout=args.connect_timeout,
        read_timeout=args.read_timeout,
        insecure=args.insecure,
    )


def open_store(args: argparse.Namespace) -> Store:
    """The store at --db, or the default one."""
    return Store(Path(args.db).expanduser() if args.db else default_db_path())
