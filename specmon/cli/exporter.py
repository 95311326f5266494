"""`specmon exporter`: specmon's measurements of one or many servers, served to Prometheus."""

from __future__ import annotations

import argparse
import fnmatch
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from specmon.cli import monitor, stopping
from specmon.cli.common import takes
from specmon.config import MonitorConfig
from specmon.errors import TargetError
from specmon.storage.store import Store
from specmon.target import Target

DEFAULT_LISTEN = "127.0.0.1:9835"
# A host (name, IPv4, or [IPv6]) glob, then optionally `:` and a port glob.
_ADDRESS_GLOB = re.compile(r"[\d.*?]+")
_PATTERN = re.compile(r"(?P<host>[\w.*?-]+|\[[0-9a-fA-F:.*?]+\])(?::(?P<port>[\d*?]+))?", re.ASCII)


def listen_address(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:9835` for IPv6) as (host, port)."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}")
    return host, int(port)


def target_pattern(text: str) -> tuple[str, str]:
    """An `--allow-target` pattern as (host glob, port glob): `*` for the port when none."""
    found = _PATTERN.fullmatch(text)
    if found is None:
        raise argparse.ArgumentTypeError(
            f"not a HOST or HOST:PORT pattern (no scheme or path; * and ? as wildcards): {text!r}"
        )
    return found["host"].strip("[]").lower(), found["port"] or "*"


def target_matches(url: str, patterns: Sequence[tuple[str, str]]) -> bool:
    """Whether a target's host and port match one of `target_pattern`'s patterns. A host
    pattern of digits, dots and wildcards (`10.1.*`) matches addresses only, not a name that
    starts like one (`10.1.example.com`)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = str(parts.port or (443 if parts.scheme == "https" else 80))
    is_address = _is_address(host)
    return any(
        fnmatch.fnmatchcase(host, host_glob)
        and fnmatch.fnmatchcase(port, port_glob)
        and (is_address or not _ADDRESS_GLOB.fullmatch(host_glob))
        for host_glob, port_glob in patterns
    )


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def register(commands: Any) -> None:
    """Add the `exporter` subcommand."""
    exporter = commands.add_parser(
        "exporter",
        help="serve specmon's own measurements of one or many servers to Prometheus",
        description="Samples and probes each server as the dashboard does (--url, repeated, "
        "or [[targets]] in the config file, each with its baseline_url) and serves "
        "specmon_* metrics at /metrics: probe decode tok/s, accept length, cycle histogram, "
        "speedup against the baseline with its 95% interval, the baseline's state (valid, "
        "unverified, stale) and age, probe success, target info; the probe figures and the "
        "speedup only while they hold (the target up, its latest probe succeeded, the "
        "baseline applying). Baselines come from the snapshot store (`specmon bench` of the "
        "baseline server saves one), or from each target's baseline server with "
        "--take-baselines. "
        "The endpoint has no authentication: it listens on localhost unless told otherwise.",
        allow_abbrev=False,
    )
    exporter.add_argument(
        "--listen",
        type=listen_address,
        default=listen_address(DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help=f"address to serve on (default {DEFAULT_LISTEN})",
    )
    exporter.add_argument(
        "--multi-target",
        action="store_true",
        help="serve /probe?target=URL as the blackbox exporter: each scrape probes that "
        "target once and answers its metrics alone, so Prometheus's scrape interval is the "
        "probe cadence (no background probes); the targets are those configured",
    )
    exporter.add_argument(
        "--allow-target",
        action="append",
        default=[],
        type=target_pattern,
        metavar="PATTERN",
        help="with --multi-target, also accept a target whose HOST or HOST:PORT matches this "
        "pattern (* and ? as in a shell: '10.1.*', '*.gpu.example:8000'); the API key is sent "
        "to it (repeatable)",
    )
    exporter.add_argument(
        "--any-target",
        action="store_true",
        help="with --multi-target, accept any target URL; the API key goes only to those "
        "configured or matching --allow-target; a target let in by this alone is forgotten "
        "60 s after the last scrape naming it, and at most 16 are kept and 10 added a "
        "minute (more: 429)",
    )
    exporter.add_argument(
        "--take-baselines",
        action="store_true",
        help="take a baseline from a target's baseline server when none in the store applies "
        "(at most one attempt per 5 minutes per target)",
    )
    settings = monitor.add_arguments(exporter, command=True, theme=False)
    takes(exporter, **{action.dest: None for action in settings})
    exporter.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted (Ctrl-C or SIGTERM)."""
    for flag, given in (("--any-target", args.any_target), ("--allow-target", args.allow_target)):
        if given and not args.multi_target:
            raise TargetError(f"{flag} is for /probe?target=URL: give --multi-target too")
    config = monitor.config_from_args(args)
    credentials = monitor.targets_of(config).server
    store = monitor.open_store_or_warn(config.db)
    try:
        return stopping.run(_serve(args, config, credentials, store))
    finally:
        if store is not None:
            store.close()


async def _serve(
    args: argparse.Namespace, config: MonitorConfig, credentials: Target, store: Store | None
) -> int:
    # Imported here: aiohttp takes ~150 ms to import, which every other command would pay.
    from specmon.config import FleetTarget
    from specmon.exporter.server import Exporter
    from specmon.session.fleet import Fleet
    from specmon.session.server_session import ServerSession

    probing = not args.multi_target

    def session(target: FleetTarget, server: Target = credentials) -> ServerSession:
        return ServerSession.of_target(
            target, server, config, store, probing=probing, take_baselines=args.take_baselines
        )

    def new_session(url: str) -> ServerSession | None:
        """A target a scraper names: with the key if a pattern vouches for it, without it if
        only --any-target lets it in, else refused."""
        if target_matches(url, args.allow_target):
            return session(FleetTarget(url))
        return (
            session(FleetTarget(url), replace(credentials, api_key=None))
            if args.any_target
            else None
        )

    fleet = Fleet([session(t) for t in config.targets])
    host, port = args.listen
    exporter = Exporter(
        fleet,
        host,
        port,
        multi_target=args.multi_target,
        new_session=new_session,
        connect_timeout=config.connect_timeout,
        vouched=lambda url: target_matches(url, args.allow_target),
    )
    await exporter.start()
    try:
        cadence = (
            "one probe per scrape of /probe?target=URL"
            if args.multi_target
            else f"probing every {config.probe_every:g} s"
            if config.probe
            else "not probing (--no-probe)"
        )
        print(
            f"specmon exporter: serving {exporter.url}/metrics for "
            f"{len(config.targets)} target(s), {cadence}",
            flush=True,
        )
        for target in config.targets:
            baseline = f" (baseline server {target.baseline_url})" if target.baseline_url else ""
            print(f"  {target.label}{baseline}", flush=True)
        await fleet.run()
    finally:
        await exporter.stop()
    return 0
