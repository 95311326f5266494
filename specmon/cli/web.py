"""`specmon web [dashboard options]`: the live dashboard in a browser, every tab on one feed.

textual-serve runs one dashboard process per browser tab (`specmon.cli.web_tab`). They all
read one hub (`specmon.session.hub`) that this process runs: one sampler, one probe stream and
one bench at a time however many tabs are open. Bound to 127.0.0.1 unless `--bind` says
otherwise; bound elsewhere, every request needs the token. Whatever the address, a request
must name one of this machine's hosts (`specmon.web_hosts`), and at most `--max-tabs` tabs are
open at once.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import secrets
import shlex
import signal
import socket
import sys
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from specmon.cli import monitor
from specmon.cli.common import count, positive_int, refuse_on_command_line, takes
from specmon.cli.stopping import _interrupt, _stop_signals  # the handlers `main` installs
from specmon.errors import SpecmonError, TargetError
from specmon.session.feed import LocalFeed
from specmon.session.hub import Hub
from specmon.sources.http import load_secret
from specmon.target import ApiKey
from specmon.web_hosts import allowed_hosts, allowed_name, is_loopback, reachable_hosts

DEFAULT_BIND = "127.0.0.1"
DEFAULT_WEB_PORT = 8765
DEFAULT_TOKEN_ENV = "SPECMON_WEB_TOKEN"
DEFAULT_MAX_TABS = 4
NEW_TOKEN = "new"  # the origin of a token made here: the only one ever printed


def register(commands: Any) -> None:
    """Add the `web` subcommand."""
    web = commands.add_parser(
        "web",
        help="the live dashboard in a browser (textual-serve); every tab shares one probe",
        description="Serves the live dashboard to browsers: one tab per connection, all of them "
        "fed by one sampler and one probe loop in this process, so a tab adds no load on the "
        "server; a baseline taken in one tab (b) shows in all. Takes the dashboard's options "
        f"(--url, --baseline-url, …). Listens on {DEFAULT_BIND}:{DEFAULT_WEB_PORT} by default; "
        "bound to another address it asks every request for a token: from --token-file, else "
        f"${DEFAULT_TOKEN_ENV}, else a new one, printed.",
        allow_abbrev=False,
    )
    dashboard = monitor.add_arguments(web, command=True)
    takes(web, **{action.dest: None for action in dashboard})
    group = web.add_argument_group("web")
    group.add_argument(
        "--bind",
        metavar="ADDR",
        default=DEFAULT_BIND,
        help=f"address to listen on (default {DEFAULT_BIND}: this machine "
        "only; 0.0.0.0 for every interface, with a token)",
    )
    group.add_argument(
        "--web-port",
        type=port_number,
        metavar="PORT",
        default=DEFAULT_WEB_PORT,
        help=f"port to listen on (default {DEFAULT_WEB_PORT}; 0 picks a free one, printed)",
    )
    group.add_argument(
        "--token-env",
        metavar="NAME",
        help=f"environment variable holding the token (default {DEFAULT_TOKEN_ENV})",
    )
    group.add_argument("--token-file", metavar="PATH", help="file holding the token")
    group.add_argument(
        "--allow-host",
        metavar="NAME",
        type=allowed_name,
        action="append",
        default=[],
        help="another name browsers reach it by (a reverse "
        "proxy's, a DNS name); a request naming any host but these, localhost, "
        "127.0.0.1, [::1] and the --bind address is refused (repeatable)",
    )
    group.add_argument(
        "--max-tabs",
        type=positive_int,
        metavar="N",
        default=DEFAULT_MAX_TABS,
        help=f"most tabs open at once, each a dashboard process (default "
        f"{DEFAULT_MAX_TABS}); one more gets a page saying so",
    )
    group.add_argument(
        "--readonly",
        action=argparse.BooleanOptionalAction,
        help="turn off every key that benches, saves, relaunches or writes a "
        "file (b, s, the exports of c), for every tab (default: on unless bound "
        "to loopback)",
    )
    refuse_on_command_line(
        group, "--token", f"{DEFAULT_TOKEN_ENV}=…, --token-env NAME or --token-file PATH"
    )
    web.set_defaults(run=run)


def port_number(text: str) -> int:
    """A TCP port, 0 (any free one) to 65535."""
    value = count(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port (0 to 65535): {text}")
    return value


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; one-line errors for a taken port or a bad address."""
    try:
        from specmon.ui.web_server import serve  # Textual and textual-serve load only here
    except ImportError as exc:
        raise SpecmonError(
            f"specmon web needs textual-serve ({exc.name} is missing): pip install 'specmon[web]'"
        ) from None
    config = monitor.dashboard_config(args)
    if config.fleet:
        raise TargetError(
            "specmon web serves one server's dashboard; several (--url repeated, "
            "[[targets]]) open the fleet table in the terminal: specmon --url A "
            "--url B"
        )
    targets = monitor.targets_of(config)
    token = _token(args)
    listening = listen(args.bind, args.web_port)
    query = ""
    if token is not None:
        shown = token.value if token.origin == NEW_TOKEN else f"… (the token in {token.origin})"
        query = f"?token={shown}"
    # Bound to every interface: the machine's addresses and name, not 0.0.0.0 (no browser's).
    first, *others = (
        f"http://{f'[{host}]' if ':' in host else host}:{listening.getsockname()[1]}/"
        for host in reachable_hosts(args.bind)
    )
    also = f" (also {', '.join(others)})" if others else ""
    print(f"specmon web: serving the dashboard of {config.url} on {first}{query}{also}", flush=True)
    read_only = args.readonly if args.readonly is not None else not is_loopback(args.bind)
    print("specmon web: every tab shares one sampler and probe; Ctrl-C stops", flush=True)
    if read_only:
        print(
            "specmon web: read-only: b, s, d and exports are off in every tab (--no-readonly "
            "turns them on)",
            flush=True,
        )
    store = monitor.open_store_or_warn(config.db)
    try:
        with tempfile.TemporaryDirectory(prefix="specmon-web-") as private:  # made 0700
            hub = Hub(LocalFeed(config, targets, store), Path(private), read_only=read_only)
            tab = shlex.join(
                [
                    sys.executable,
                    "-m",
                    "specmon.cli.web_tab",
                    str(hub.path),
                    *(["--readonly"] if read_only else []),
                ]
            )
            hosts = allowed_hosts(args.bind, args.allow_host)
            _run_then_drop_stragglers(
                serve(
                    hub,
                    tab,
                    listening,
                    token.value if token else None,
                    hosts=hosts,
                    max_tabs=args.max_tabs,
                )
            )
    finally:
        listening.close()
        if store is not None:
            store.close()
    return 0


STRAGGLERS_GRACE_S = 5.0
"""How long tasks still running when the server stops get to end once cancelled."""


def _run_then_drop_stragglers(main: Coroutine[Any, Any, None]) -> None:
    """`asyncio.run(main)`, except that tasks left running when it ends get STRAGGLERS_GRACE_S,
    and SIGTERM and SIGHUP cancel `main` through the loop (then KeyboardInterrupt, as Ctrl-C).

    textual-serve's tab tasks swallow their cancellation and wait on the tab's process; seen in
    CI, one stopped by SIGTERM while a tab was starting waited for good in asyncio.run's clean-up.
    The signals go through the loop, as `stopping.run` has them: raised in whatever frame they
    land in, a tab's task ended with the KeyboardInterrupt, printed as never retrieved.
    """
    loop = asyncio.new_event_loop()
    task = loop.create_task(main)
    signalled = False

    def stop() -> None:
        nonlocal signalled
        signalled = True
        task.cancel()

    signums = [s for s in _stop_signals() if signal.getsignal(s) is _interrupt]
    for signum in signums:
        loop.add_signal_handler(signum, stop)
    try:
        loop.run_until_complete(task)
    except asyncio.CancelledError:
        if not signalled:
            raise
    finally:
        for signum in signums:
            loop.remove_signal_handler(signum)  # which leaves SIG_DFL: put the handler back
            signal.signal(signum, _interrupt)
        left = asyncio.all_tasks(loop)
        for straggler in left:
            straggler.cancel()
        if left:
            loop.run_until_complete(asyncio.wait(left, timeout=STRAGGLERS_GRACE_S))
        loop.close()
    if signalled:
        raise KeyboardInterrupt


def _token(args: argparse.Namespace) -> ApiKey | None:
    """The token given, else a new one (printed) unless bound to loopback (then None)."""
    found, warnings = load_secret(
        args.token_env,
        args.token_file,
        default_env=DEFAULT_TOKEN_ENV,
        what="token",
        env_flag="--token-env",
    )
    for warning in warnings:
        print(f"specmon: warning: {warning}", file=sys.stderr)
    if found is not None or is_loopback(args.bind):
        return found
    return ApiKey(secrets.token_urlsafe(24), NEW_TOKEN)


def listen(bind: str, port: int) -> socket.socket:
    """A socket listening on `bind`:`port`.

    Raises:
        TargetError: `--bind` is not an address of this machine (a bad argument: exit 2).
        SpecmonError: The port is taken or privileged (exit 1, as for `exporter` and `agent`).
    """
    try:
        infos = socket.getaddrinfo(bind, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise TargetError(f"--bind {bind}: not an address ({exc.strerror})") from None
    family, _, _, _, address = infos[0]
    try:
        return socket.create_server(address, family=family, backlog=64)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise SpecmonError(
                f"port {port} on {bind} is taken by another program: choose another with --web-port"
            ) from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise TargetError(f"--bind {bind}: not an address of this machine") from None
        if exc.errno == errno.EACCES:
            raise SpecmonError(
                f"port {port} needs privileges: choose one above 1023 with --web-port"
            ) from None
        raise SpecmonError(f"cannot listen on {bind}:{port}: {exc.strerror}") from None
