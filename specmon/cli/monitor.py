"""`specmon [--host H --port P | --url URL] …`: the live dashboard (the default command)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specmon.cli import once
from specmon.cli.common import add_connection, setting
from specmon.cli.crash import run_dashboard
from specmon.config import (
    SETTINGS,
    TARGETS,
    MonitorConfig,
    Targets,
    default_config_path,
    default_dumps_path,
    load_config,
)
from specmon.errors import SpecmonError, TargetError
from specmon.reports.check_report import EXIT_STORE
from specmon.session.recording import DEFAULT_MAX_BYTES, Header
from specmon.session.server_session import ServerSession, dashboard_session
from specmon.sources.http import load_api_key
from specmon.storage.store import Store, StoreCorrupt, StoreTooNew, default_db_path
from specmon.target import Target


def add_arguments(
    parser: argparse.ArgumentParser, *, command: bool = False, theme: bool = True
) -> list[argparse.Action]:
    """The dashboard's options, on the top-level parser (no value means "not given").

    Args:
        parser: The top-level parser, or a command's that serves the dashboard (`web`) or
            watches servers as it does (`exporter`, without `theme`).
        command: On a command's parser: not given there leaves what was given before it.
        theme: Take --theme (not the exporter: it draws nothing).

    Returns:
        Them: a command may take some of them too (`common.takes`), given before or after it.
    """
    group = parser.add_argument_group(
        "live dashboard" + ("" if command else " (the default command)")
    )
    add = _adder(group, command)
    servers = [
        add("--host", help=SETTINGS["host"][1]),
        add("--port", type=setting("port"), help=SETTINGS["port"][1]),
        add(
            "--url",
            action="append",
            help=SETTINGS["url"][1] + "; repeat it to watch "
            "several servers (or list them as [[targets]] in the config file)",
        ),
        add("--baseline-url", metavar="URL", help=SETTINGS["baseline_url"][1]),
        add(
            "--metrics-url",
            action="append",
            metavar="URL",
            help=SETTINGS["metrics_url"][1] + "; repeat it for each worker",
        ),
    ]
    if not command:
        servers.append(
            add(
                "--prometheus",
                metavar="URL",
                help="the fleet table from a Prometheus server that scrapes specmon exporters "
                "(its HTTP API: one query per figure for every server); Enter opens a server's "
                "dashboard directly",
            )
        )
    store = add("--db", metavar="PATH", help=f"snapshot store (default {default_db_path()})")
    if not command:
        once.add_arguments(group)
        group.add_argument(
            "--record",
            metavar="FILE",
            help="also write every input the dashboard receives to FILE, for "
            "specmon replay (as specmon record does; owner-only, no API key, "
            f"at most {DEFAULT_MAX_BYTES // (1024 * 1024)} MB; a new file: one that exists is "
            "refused unless --force)",
        )
        from specmon.cli.record import add_force  # record imports this module

        add_force(group)
    return [
        *servers,
        *_settings(add, theme=theme),
        store,
        *add_connection(parser, top_level=not command, defaults=False),
    ]


def add_settings(parser: argparse.ArgumentParser, title: str) -> list[argparse.Action]:
    """The dashboard's settings on the parser of a command that launches the server it opens the
    dashboard on (`launch`, `ab --watch`): all but the server's address, the store and the
    connection, which such a command takes on its own. Returns them (see `add_arguments`)."""
    return _settings(_adder(parser.add_argument_group(title), command=True), theme=True)


def _adder(group: argparse._ArgumentGroup, command: bool) -> Callable[..., argparse.Action]:
    """`group.add_argument`, unset meaning "not given": None at the top level; on a command's
    parser nothing, so that one given before the command stays."""
    default = argparse.SUPPRESS if command else None

    def add(*flags: str, **kwargs: Any) -> argparse.Action:
        return group.add_argument(*flags, **{"default": default, **kwargs})

    return add


def _settings(add: Callable[..., argparse.Action], *, theme: bool) -> list[argparse.Action]:
    """How the dashboard samples, probes and judges, its config file and theme."""

    def flag(name: str, metavar: str) -> argparse.Action:
        """`--name` of a setting, with its type, limits and help from `SETTINGS`."""
        option = "--" + name.replace("_", "-")
        return add(option, type=setting(name), metavar=metavar, help=SETTINGS[name][1])

    actions = [
        flag("interval", "S"),
        flag("probe_every", "S"),
        flag("probe_tokens", "N"),
        # A path (or "builtin"), read by `load_config` like the config file's and SPECMON_*'s.
        add("--probe-prompts", metavar="FILE", help=SETTINGS["probe_prompts"][1]),
        add(
            "--no-probe",
            dest="probe",
            action="store_false",
            help="do not send probe requests (server figures only)",
        ),
        add(
            "--no-history",
            dest="history",
            action="store_false",
            help="do not record samples and probes in the store",
        ),
        flag("history_days", "DAYS"),
        flag("history_mb", "MB"),
        flag("baseline_runs", "N"),
        flag("max_age", "S"),
        add("--gpu-metrics", metavar="URL", help=SETTINGS["gpu_metrics"][1]),
        add(
            "--config",
            metavar="PATH",
            help=f"TOML settings file (default {default_config_path()} if present); "
            "flags > SPECMON_* environment > file",
        ),
    ]
    if theme:  # what draws a screen: its theme, and where its screen dumps go
        actions.append(add("--theme", help=SETTINGS["theme"][1] + "; t cycles themes"))
        actions.append(
            add(
                "--dumps",
                metavar="DIR",
                help=SETTINGS["dumps"][1] + f" (default {default_dumps_path()})",
            )
        )
    return actions


def config_from_args(args: argparse.Namespace, *, launched: str | None = None) -> MonitorConfig:
    """Merge the flags the user gave with the environment and the config file.

    Args:
        args: The command line.
        launched: The URL of the server a command launched (`launch`): it has no --host, --port
            or --url, and replaces any the environment or config file name.

    Raises:
        TargetError: A bad value, or several --url with --baseline-url or --host/--port.
    """
    flags: dict[str, Any] = {name: getattr(args, name, None) for name in SETTINGS}
    urls: list[str] = [launched] if launched else flags.pop("url") or []
    if urls and (flags["host"] is not None or flags["port"] is not None):
        raise TargetError("give either --url or --host/--port, not both")
    if len(urls) > 1:
        for name, what in (("baseline_url", "baseline server"), ("metrics_url", "workers")):
            if flags[name] is not None:
                raise TargetError(
                    f"--{name.replace('_', '-')} names one server's {what}: with several "
                    f"--url, give each its {name} in the config file's [[targets]]"
                )
        flags[TARGETS] = [{"url": url} for url in urls]
    elif urls:
        flags["url"] = urls[0]
    return load_config(flags, config_path=args.config)


def check_theme(name: str) -> None:
    """Refuse a theme the dashboard does not have, before it starts (from a flag, SPECMON_THEME
    or the config file).

    Raises:
        TargetError: Naming the known themes.
    """
    from specmon.ui.theming import theme_names  # Textual's own themes: only for the dashboard

    known = theme_names()
    if name not in known:
        raise TargetError(f"unknown theme {name!r}; known: {', '.join(known)}")


def dashboard_config(args: argparse.Namespace, *, launched: str | None = None) -> MonitorConfig:
    """`config_from_args`, for a command that opens the dashboard: its theme must exist."""
    config = config_from_args(args, launched=launched)
    check_theme(config.theme)
    return config


def run(args: argparse.Namespace) -> int:
    """Open the dashboard; returns when the user quits (0) or it crashed (`EXIT_CRASHED`).
    With --once, print one frame as JSON instead (`cli.once`)."""
    once.check_arguments(args)
    if getattr(args, "force", False) and not args.record:
        raise TargetError("--force replaces the --record FILE: give it with --record")
    if args.record and args.once:
        raise TargetError("--record records the dashboard; --once prints one frame, give one")
    if args.once:
        config = config_from_args(args)  # no theme: nothing is drawn
        try:
            store = open_store_or_warn(config.db, refuse_unreadable=True)
        except (StoreCorrupt, StoreTooNew) as exc:
            return _refused(exc)
        try:
            timeout = args.once_timeout or once.DEFAULT_ONCE_TIMEOUT_S
            return once.run(config, targets_of(config).server, store, timeout)
        finally:
            if store is not None:
                store.close()
    from specmon.ui.app import SpecmonApp  # Textual loads only for the dashboard

    if getattr(args, "prometheus", None):
        return _run_prometheus(args)

    config = dashboard_config(args)
    if args.record and config.fleet:
        raise TargetError(
            "--record records one server's dashboard: with several servers, "
            "record each with specmon record"
        )
    targets = targets_of(config)
    try:  # before the recording is made and Textual starts
        store = open_store_or_warn(config.db, refuse_unreadable=True)
    except (StoreCorrupt, StoreTooNew) as exc:
        return _refused(exc)
    recording = None
    if args.record:
        header = Header.of(config, time.time())
        from specmon.cli.record import new_recording  # record imports this module

        recording = new_recording(
            Path(args.record).expanduser(), header, force=getattr(args, "force", False)
        )
    try:
        if config.fleet:
            from specmon.session.fleet import Fleet
            from specmon.ui.fleet_app import FleetApp

            fleet = Fleet(
                [ServerSession.of_target(t, targets.server, config, store) for t in config.targets]
            )
            return run_dashboard(FleetApp(config, fleet))
        session = dashboard_session(config, targets, store, recording=recording)
        return run_dashboard(SpecmonApp(session))
    finally:
        if store is not None:
            store.close()
        if recording is not None:
            recording.close()


def _run_prometheus(args: argparse.Namespace) -> int:
    """`--prometheus URL`: the table from Prometheus; Enter opens a server's dashboard, whose
    quitting brings the table back; q on the table ends."""
    from specmon.ui.prometheus_fleet_app import PrometheusFleetApp
    from specmon.ui.screens.fleet import TableChoice

    if args.url or args.host or args.record:
        raise TargetError(
            "--prometheus reads the servers from Prometheus: give no --url/--host/--record"
        )
    config = dashboard_config(args)
    choice = TableChoice()
    while True:
        url = PrometheusFleetApp(args.prometheus, config.interval, choice=choice).run()
        if not url:
            return 0
        args.url = [url]
        server_config = dashboard_config(args)
        args.url = None
        try:
            store = open_store_or_warn(server_config.db, refuse_unreadable=True)
        except (StoreCorrupt, StoreTooNew) as exc:
            return _refused(exc)
        try:
            session = dashboard_session(server_config, targets_of(server_config), store)
            from specmon.ui.app import SpecmonApp

            code = run_dashboard(SpecmonApp(session))
        finally:
            if store is not None:
                store.close()
        if code != 0:
            return code


def targets_of(config: MonitorConfig) -> Targets:
    """The monitored and baseline targets, sharing credentials and timeouts."""

    key, warnings = load_api_key(config.api_key_env, config.api_key_file)
    for warning in warnings:
        print(f"specmon: warning: {warning}", file=sys.stderr)

    def target(url: str, workers: tuple[str, ...] = ()) -> Target:
        return Target(
            url, key, config.connect_timeout, config.read_timeout, config.insecure, workers
        )

    return Targets(
        target(config.url, config.metrics_url),
        target(config.baseline_url) if config.baseline_url else None,
    )


def _refused(exc: StoreCorrupt | StoreTooNew) -> int:
    """A store named that is not one specmon can read: said as `check` says it, its exit code."""
    print(f"specmon: error: {exc}", file=sys.stderr)
    return EXIT_STORE


def open_store_or_warn(db: str | None, *, refuse_unreadable: bool = False) -> Store | None:
    """The store, or None with a warning: the dashboard runs without one (nothing is saved).

    Raises:
        StoreCorrupt, StoreTooNew: With `refuse_unreadable`, the file is not a store this
            specmon reads (the dashboard refuses it, as `check` does, rather than run without).
    """
    try:
        return Store(Path(db).expanduser() if db else default_db_path())
    except SpecmonError as exc:
        if refuse_unreadable and isinstance(exc, StoreCorrupt | StoreTooNew):
            raise
        print(f"specmon: warning: snapshots cannot be saved: {exc}", file=sys.stderr)
        return None
