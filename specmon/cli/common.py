"""What every command shares: argument types, connection options, the target and the store."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.config import SETTINGS, load_config
from specmon.errors import TargetError
from specmon.probe_prompts import ProbePrompt, probe_prompts_setting
from specmon.sources.http import DEFAULT_API_KEY_ENV, load_api_key, make_client
from specmon.storage.store import Store, default_db_path
from specmon.target import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, Target, normalise_url

__all__ = ["Target", "make_client", "normalise_url"]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell shows for a program a closed pipe killed


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
    """Tokens per run of a bench (`bench`, `whatif`, `ab`): the range of a probe's and a
    baseline run's (`--probe-tokens`, 2 to 100000), one rule for every run specmon times."""
    value: int = setting("probe_tokens")(text)
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 3600 seconds: {text}")
    return value


def setting(name: str) -> Callable[[str], Any]:
    """The argparse type of the flag of a setting: its parser in `config.SETTINGS`, so that the
    flag accepts what SPECMON_* and the config file do, and says the same range when it does not."""
    parse = SETTINGS[name][0]

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def probe_prompts_arg(value: str | None) -> tuple[ProbePrompt, ...]:
    """`--probe-prompts` of `check` and `bench` (the dashboard's setting, given before or after
    the command): none when not given.

    Raises:
        TargetError: The file is unusable, naming file:line and the field.
    """
    if value is None:
        return ()
    try:
        return probe_prompts_setting(value)
    except ValueError as exc:
        raise TargetError(f"--probe-prompts: {exc}") from None


class _RefuseSecretOnCommandLine(argparse.Action):
    """An option that only says where its secret goes instead: argv shows in the process list."""

    def __init__(self, *args: Any, advice: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.advice = advice

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.error(
            f"{option_string} is refused: a secret on the command line shows in the process "
            f"list. Use {self.advice}"
        )


def refuse_on_command_line(
    group: argparse._ArgumentGroup | argparse.ArgumentParser, flag: str, advice: str
) -> argparse.Action:
    """A hidden `flag` that refuses its value and says where to put it (`advice`)."""
    return group.add_argument(
        flag, nargs="?", help=argparse.SUPPRESS, action=_RefuseSecretOnCommandLine, advice=advice
    )


def takes(parser: argparse.ArgumentParser, **defaults: Any) -> None:
    """Declare the top-level options `parser`'s command takes, with their defaults there.

    An option several commands share is on the top-level parser (None unless given) and on each
    command's parser with `argparse.SUPPRESS`, so that one not given after the command does not
    overwrite one given before it: `specmon --db X check …` and `specmon check … --db X` are
    the same. `apply_shared` then fills in these defaults.
    """
    parser.set_defaults(shared=(parser.get_default("shared") or {}) | defaults)


def apply_shared(
    parser: argparse.ArgumentParser, top_level: Sequence[argparse.Action], args: argparse.Namespace
) -> None:
    """Fill in the defaults of the shared options the command took from nowhere, and refuse
    top-level options given before a command that does not take them (never silently unused).

    Args:
        parser: The top-level parser (for its error).
        top_level: Its options that a command may take.
        args: What it parsed; `args.shared` holds the command's `takes` (none: it takes none).
    """
    shared: dict[str, Any] = getattr(args, "shared", {})
    for action in top_level:
        value = getattr(args, action.dest, None)
        if action.dest in shared:
            if value is None:
                setattr(args, action.dest, shared[action.dest])
        elif value is not None:
            command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
            parser.error(
                f"{action.option_strings[-1]} before the command does not apply to "
                f"`specmon {command}`"
            )


def add_connection(
    parser: argparse.ArgumentParser, *, top_level: bool = False, defaults: bool = True
) -> list[argparse.Action]:
    """The options of every command that talks to a server; returns them.

    On the top-level parser unset options stay None: for the dashboard, a config file or the
    environment can set them; a command takes them with their defaults (`takes`) unless
    `defaults` is false (`web`: the dashboard's configuration fills them in).
    """
    default = None if top_level else argparse.SUPPRESS
    group = parser.add_argument_group("connection")
    actions = [
        group.add_argument(
            "--api-key-env",
            metavar="NAME",
            default=default,
            help=f"environment variable holding the API key (default {DEFAULT_API_KEY_ENV})",
        ),
        group.add_argument(
            "--api-key-file", metavar="PATH", default=default, help="file holding the API key"
        ),
        refuse_on_command_line(
            group,
            "--api-key",
            f"{DEFAULT_API_KEY_ENV}=…, --api-key-env NAME or --api-key-file PATH",
        ),
        group.add_argument(
            "--insecure",
            action="store_true",
            default=default,
            help="do not verify the server's TLS certificate",
        ),
        group.add_argument(
            "--connect-timeout",
            type=setting("connect_timeout"),
            default=default,
            metavar="S",
            help=f"seconds to wait for a connection (default {DEFAULT_CONNECT_TIMEOUT:g})",
        ),
        group.add_argument(
            "--read-timeout",
            type=setting("read_timeout"),
            default=default,
            metavar="S",
            help=f"seconds to wait for each read; a whole answer gets twice this "
            f"(default {DEFAULT_READ_TIMEOUT:g})",
        ),
    ]
    if not top_level and defaults:
        takes(
            parser,
            api_key_env=None,
            api_key_file=None,
            insecure=False,
            connect_timeout=DEFAULT_CONNECT_TIMEOUT,
            read_timeout=DEFAULT_READ_TIMEOUT,
        )
    return actions


def add_max_age(parser: argparse.ArgumentParser) -> None:
    """`--max-age S`: how old a baseline may be (its default applied by `takes`)."""
    parser.add_argument(
        "--max-age",
        type=setting("max_age"),
        default=argparse.SUPPRESS,
        metavar="S",
        help="baselines older than this are stale (for a stored run: taken longer than this "
        f"before it; default {DEFAULT_MAX_AGE_S:g} s)",
    )


def add_db(parser: argparse.ArgumentParser, *, config: bool = True) -> None:
    """The --db option of a command (the top-level one is the dashboard's), and with `config`
    --config: the store it opens is the one the dashboard's settings name (`store_setting`)."""
    parser.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"snapshot store (default: SPECMON_DB, the config file's db, {default_db_path()})",
    )
    takes(parser, db=None)
    if config:
        parser.add_argument(
            "--config",
            metavar="PATH",
            default=argparse.SUPPRESS,
            help="TOML settings file, for its db (default: the user's config file if present)",
        )
        takes(parser, config=None)


def add_metrics_url(parser: argparse.ArgumentParser) -> None:
    """`--metrics-url URL` (repeatable) of a command that reads one server behind a router;
    given before the command (the dashboard's option) or after it."""
    parser.add_argument(
        "--metrics-url",
        action="append",
        default=argparse.SUPPRESS,
        metavar="URL",
        help=SETTINGS["metrics_url"][1] + "; repeat it for each worker",
    )
    takes(parser, metrics_url=None)


def target_of(args: argparse.Namespace, url: str | None = None) -> Target:
    """The target of a headless command, from its URL (`server`, or `url`), its workers
    (`--metrics-url`, where the command takes it) and connection options.

    Raises:
        TargetError: A bad address, or the server among its own workers.
    """
    server = normalise_url(url or args.server)
    workers: tuple[str, ...] = ()
    if getattr(args, "metrics_url", None):
        workers = _workers(args.metrics_url)
        if server in workers:
            raise TargetError(
                "--metrics-url lists the monitored server itself: give the workers behind it"
            )
    key, warnings = load_api_key(args.api_key_env, args.api_key_file)
    for warning in warnings:
        print(f"specmon: warning: {warning}", file=sys.stderr)
    if args.insecure:
        print("specmon: warning: TLS verification is off (--insecure)", file=sys.stderr)
    return Target(
        url=server,
        api_key=key,
        connect_timeout=args.connect_timeout,
        read_timeout=args.read_timeout,
        insecure=args.insecure,
        metrics_urls=workers,
    )


def _workers(urls: list[str]) -> tuple[str, ...]:
    try:
        workers: tuple[str, ...] = SETTINGS["metrics_url"][0](urls)
    except ValueError as exc:
        raise TargetError(f"--metrics-url: {exc}") from None
    return workers


def store_setting(args: argparse.Namespace) -> str | None:
    """The store the user named, as the dashboard reads it: --db, else SPECMON_DB, else the
    config file's `db` (--config, or the user's config file); None: the default store.

    Raises:
        TargetError: The config file or the environment holds a bad setting.
    """
    if getattr(args, "db", None):
        return str(args.db)
    return load_config({}, config_path=getattr(args, "config", None)).db


def open_store(args: argparse.Namespace, *, create: bool = True) -> Store:
    """The store the user named (`store_setting`), or the default one.

    Args:
        args: The command line.
        create: Create it if missing: for a command that saves. A command that reads first
            gives False, so that a mistyped --db is an error rather than a new, empty store.

    Raises:
        StoreMissing: `create` is false and there is no store there.
        StoreError: It cannot be opened (see `Store`).
        TargetError: The config file or the environment holds a bad setting.
    """
    db = store_setting(args)
    return Store(Path(db).expanduser() if db else default_db_path(), create=create)
