"""The monitor's configuration: defaults < TOML file < environment (`SPECMON_*`) < flags.

Every setting has one entry in `SETTINGS`, which gives its type, its default and its help; the
file, the environment and the command line are all read through it, so they cannot disagree.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import platformdirs

from specmon.errors import TargetError
from specmon.nesting import TooDeep, loads_toml
from specmon.probe_prompts import (
    BUILTIN,
    DEFAULT_MAX_TOKENS,
    DEFAULT_SET,
    ProbePrompt,
    probe_prompts_setting,
)
from specmon.target import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, Target, normalise_url

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 30000  # SGLang's default
ENV_PREFIX = "SPECMON_"


def default_config_path() -> Path:
    """`~/.config/specmon/config.toml` on Linux (the platform's config dir elsewhere)."""
    return platformdirs.user_config_path("specmon") / "config.toml"


def default_dumps_path() -> Path:
    """Where the dashboard's `d` writes screen dumps without `--dumps`: specmon's user state
    dir (~/.local/state/specmon/dumps on Linux): kept across runs, out of the working tree."""
    return platformdirs.user_state_path("specmon") / "dumps"


@dataclass(frozen=True, slots=True)
class Targets:
    """The monitored server and, optionally, a non-speculative baseline server."""

    server: Target
    baseline: Target | None = None


@dataclass(frozen=True, slots=True)
class FleetTarget:
    """One server of a fleet (`--url A --url B`, or a `[[targets]]` table of the config file)."""

    url: str
    baseline_url: str | None = None
    """Its non-speculative twin, for its baselines."""
    name: str | None = None
    """A short name to show instead of the URL."""
    gpu_metrics: str | None = None
    """A DCGM-style endpoint for its GPUs, instead of the `gpu_metrics` setting."""
    metrics_url: tuple[str, ...] = ()
    """Behind a router: its workers' addresses, instead of the `metrics_url` setting."""

    @property
    def label(self) -> str:
        """The name, else the URL."""
        return self.name or self.url


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    """Everything the live dashboard needs to know; built by `load_config`."""

    url: str
    """The server (with several, the first of `fleet`)."""
    baseline_url: str | None = None
    metrics_url: tuple[str, ...] = ()
    """Behind a router or gateway: the workers whose server info and /metrics are read (their
    counters summed), `url` taking only the probe's requests; empty: `url` serves all."""
    interval: float = 1.0
    probe: bool = True
    probe_every: float = 10.0
    probe_tokens: int = DEFAULT_MAX_TOKENS
    probe_prompts: tuple[ProbePrompt, ...] = DEFAULT_SET
    """What the probe sends, one category per probe in turn (`--probe-prompts`)."""
    baseline_runs: int = 5
    max_age: float = 30 * 60.0
    gpu_metrics: str | None = None
    theme: str = "specmon-dark"
    db: str | None = None
    dumps: str | None = None
    """Where the dashboard's `d` writes screen dumps (None: `default_dumps_path()`)."""
    history: bool = True
    """Record samples and probes in the store (`specmon.session.history_writer`)."""
    history_days: float = 7.0
    history_mb: float = 50.0
    api_key_env: str | None = None
    api_key_file: str | None = None
    insecure: bool = False
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    fleet: tuple[FleetTarget, ...] = ()
    """Every server, when several were given; empty for one (`url`, `baseline_url`)."""

    @property
    def targets(self) -> tuple[FleetTarget, ...]:
        """Every server watched, each with its baseline server: one or several."""
        return self.fleet or (
            FleetTarget(self.url, self.baseline_url, metrics_url=self.metrics_url),
        )

    @property
    def dumps_folder(self) -> Path:
        """The folder the dashboard's `d` writes screen dumps into: `dumps`, else
        `default_dumps_path()`."""
        return Path(self.dumps).expanduser() if self.dumps else default_dumps_path()

    @property
    def compared_urls(self) -> list[str]:
        """The servers whose snapshots the `c` screen compares: the watched one and its
        baseline server."""
        return [self.url] + ([self.baseline_url] if self.baseline_url else [])


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _number(low: float, high: float) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        if isinstance(value, bool):
            raise ValueError(f"not a number: {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"not a number: {value!r}") from None
        if not low <= number <= high:
            raise ValueError(f"must be between {low:g} and {high:g}: {value}")
        return number

    return parse


def _whole(low: int, high: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(f"not a whole number: {value!r}")
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"not a whole number: {value!r}") from None
        if not low <= number <= high:
            raise ValueError(f"must be between {low} and {high}: {value}")
        return number

    return parse


def _text(value: Any) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool) or value == "":
        raise ValueError(f"not a text value: {value!r}")
    return str(value)


def _addresses(value: Any) -> tuple[str, ...]:
    """Servers' addresses: a list (the config file, several flags) or one text of them
    separated by commas (SPECMON_METRICS_URL), each normalised, none twice."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items:
        raise ValueError(f"not a list of addresses: {value!r}")
    urls: list[str] = []
    for item in items:
        try:
            url = normalise_url(_text(item))
        except TargetError as exc:
            raise ValueError(str(exc)) from None
        if url in urls:
            raise ValueError(f"{url} is given twice")
        urls.append(url)
    return tuple(urls)


# name -> (parser, help). `host`/`port` are folded into `url` by `load_config`. The one table of
# what each setting accepts: the config file, SPECMON_* and the flags (`cli.common.setting`).
SETTINGS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "host": (_text, f"server host (default {DEFAULT_HOST})"),
    "port": (_whole(1, 65535), f"server port (default {DEFAULT_PORT})"),
    "url": (_text, "server base URL, instead of --host/--port"),
    "baseline_url": (_text, "a non-speculative server of the same model, for baselines"),
    "metrics_url": (
        _addresses,
        "behind a router or gateway: a worker whose server info and /metrics specmon reads "
        "(the probe goes to the server URL; the workers' counters are summed)",
    ),
    "interval": (_number(0.1, 60), "seconds between samples of /metrics (default 1)"),
    "probe": (_bool, "run the streaming probe (default true)"),
    "probe_every": (_number(1, 3600), "seconds between probe requests (default 10)"),
    "probe_tokens": (
        _whole(2, 100_000),
        f"tokens per probe and baseline run (default {DEFAULT_MAX_TOKENS})",
    ),
    "probe_prompts": (
        probe_prompts_setting,
        f"'{BUILTIN}' (a prompt each of code, chat, math, summarisation, repetitive text) or a "
        "JSONL file of {category, prompt, temperature?, max_tokens?}: the probe sends one "
        "category per probe in turn (default: one general prompt)",
    ),
    "baseline_runs": (_whole(1, 100), "timed runs in a baseline (default 5)"),
    "max_age": (_number(1, 7 * 86400), "seconds before a baseline is stale (default 1800)"),
    "gpu_metrics": (
        _text,
        "a DCGM-style endpoint for the server's GPUs (default: NVML here, "
        "else port 9400 of the server's host)",
    ),
    "theme": (_text, "colour theme (default specmon-dark)"),
    "db": (_text, "snapshot store path"),
    "dumps": (_text, "folder the dashboard's d key writes screen dumps into"),
    "history": (_bool, "record samples and probes in the store (default true)"),
    "history_days": (_number(0.01, 3650), "days of history the store keeps (default 7)"),
    "history_mb": (
        _number(1, 100_000),
        "MB the store may use before its oldest history goes (default 50)",
    ),
    "api_key_env": (_text, "environment variable holding the API key"),
    "api_key_file": (_text, "file holding the API key"),
    "insecure": (_bool, "do not verify TLS certificates"),
    "connect_timeout": (_number(0.01, 3600), "seconds to wait for a connection (default 2)"),
    "read_timeout": (
        _number(0.01, 3600),
        "seconds to wait for each read; a whole answer gets twice this (default 5)",
    ),
}


TARGETS = "targets"
"""The config file's `[[targets]]` array of tables (`url`, `baseline_url`, `name`,
`gpu_metrics`, `metrics_url` each)."""
TARGET_KEYS = ("url", "baseline_url", "name", "gpu_metrics", "metrics_url")


def read_file(path: Path, *, required: bool) -> dict[str, Any]:
    """The settings of a TOML file (a `[specmon]` table or top-level keys, `[[targets]]`).

    Raises:
        TargetError: Unreadable, not TOML, or holding unknown keys.
    """
    try:
        data = loads_toml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if required:
            raise TargetError(f"config file {path} does not exist") from None
        return {}
    except OSError as exc:
        raise TargetError(f"cannot read config file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, TooDeep) as exc:
        raise TargetError(f"config file {path} is not valid TOML: {exc}") from None
    table = data.get("specmon", data)
    if not isinstance(table, dict):
        raise TargetError(f"config file {path}: [specmon] must be a table")
    unknown = sorted(set(table) - set(SETTINGS) - {TARGETS})
    if unknown:
        raise TargetError(
            f"config file {path}: unknown setting(s) {', '.join(unknown)}; "
            f"known: {', '.join(SETTINGS)}, {TARGETS}"
        )
    return dict(table)


def read_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings from `SPECMON_<NAME>` variables (`SPECMON_API_KEY` is the key, not a setting)."""
    return {
        name: environ[ENV_PREFIX + name.upper()]
        for name in SETTINGS
        if environ.get(ENV_PREFIX + name.upper(), "") != ""
    }


def _parse_targets(layer: str, raw: Any) -> tuple[FleetTarget, ...]:
    """`[[targets]]` (or the flags' several `--url`): tables of url, baseline_url and name."""
    if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
        raise TargetError(f"{layer}: {TARGETS} must be an array of tables ([[targets]])")
    parsed: list[FleetTarget] = []
    for number, entry in enumerate(raw, 1):
        where = f"{layer}: target {number}"
        unknown = sorted(set(entry) - set(TARGET_KEYS))
        if unknown:
            raise TargetError(
                f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(TARGET_KEYS)}"
            )
        if "url" not in entry:
            raise TargetError(f"{where}: no url")
        try:
            workers = _addresses(entry["metrics_url"]) if "metrics_url" in entry else ()
            values = {k: _text(v) for k, v in entry.items() if k != "metrics_url"}
            url = normalise_url(values["url"])
            baseline = values.get("baseline_url")
            target = FleetTarget(
                url,
                normalise_url(baseline) if baseline else None,
                values.get("name"),
                values.get("gpu_metrics"),
                workers,
            )
        except (ValueError, TargetError) as exc:
            raise TargetError(f"{where}: {exc}") from None
        if target.baseline_url == url:
            raise TargetError(f"{where}: its baseline_url is the server itself")
        if url in workers:
            raise TargetError(f"{where}: its metrics_url lists the server itself")
        if any(t.url == url for t in parsed):
            raise TargetError(f"{where}: {url} is given twice")
        parsed.append(target)
    return tuple(parsed)


def _parse(layer: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for name, value in raw.items():
        if name == TARGETS:
            parsed[name] = _parse_targets(layer, value)
            continue
        parser = SETTINGS[name][0]
        try:
            parsed[name] = parser(value)
        except (ValueError, TypeError) as exc:
            raise TargetError(f"{layer}: {name}: {exc}") from None
    return parsed


def load_config(
    flags: Mapping[str, Any],
    *,
    config_path: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> MonitorConfig:
    """Merge defaults, the TOML file, the environment and the flags given on the command line.

    A layer that names the servers (`url`, `host`/`port`, or `targets`) replaces how lower
    layers named them.

    Args:
        flags: Settings given as flags (only those the user typed; None means "not given");
            `targets` holds several `--url` as `[{"url": …}, …]`.
        config_path: `--config PATH` (must exist); default: the user's config file if present.
        environ: The environment (default `os.environ`).

    Raises:
        TargetError: A bad value, naming where it came from and which setting.
    """
    env = os.environ if environ is None else environ
    path = Path(config_path).expanduser() if config_path else default_config_path()
    layers = [
        (f"config file {path}", read_file(path, required=bool(config_path))),
        ("environment", read_env(env)),
        ("command line", {k: v for k, v in flags.items() if v is not None}),
    ]
    merged: dict[str, Any] = {}
    for name, raw in layers:
        layer = _parse(name, raw)
        if "url" in layer and ("host" in layer or "port" in layer):
            raise TargetError(f"{name}: give either a URL or host/port, not both")
        single = {"url", "host", "port", "baseline_url", "metrics_url"} & set(layer)
        if TARGETS in layer and single:
            raise TargetError(
                f"{name}: give either {TARGETS} (each with its baseline_url) or "
                f"{'/'.join(sorted(single))}, not both"
            )
        # A layer that names the server replaces how lower layers named it.
        if TARGETS in layer:
            for key in ("url", "host", "port", "baseline_url", "metrics_url"):
                merged.pop(key, None)
        elif "url" in layer:
            merged.pop("host", None)
            merged.pop("port", None)
            merged.pop(TARGETS, None)
        elif "host" in layer or "port" in layer:
            merged.pop("url", None)
            merged.pop(TARGETS, None)
        merged.update(layer)
    fleet: tuple[FleetTarget, ...] = merged.pop(TARGETS, ())
    if len(fleet) == 1:  # one `[[targets]]` table is one server
        merged["url"] = fleet[0].url
        merged["baseline_url"] = fleet[0].baseline_url or merged.get("baseline_url")
        merged["metrics_url"] = fleet[0].metrics_url or merged.get("metrics_url", ())
    elif fleet:
        for key, what in (("baseline_url", "baseline server"), ("metrics_url", "workers")):
            if merged.get(key):
                raise TargetError(
                    f"{key} names one server's {what}: with several "
                    f"targets, give each its own {key} in [[targets]]"
                )
        merged["url"], merged["fleet"] = fleet[0].url, fleet
    host = merged.pop("host", DEFAULT_HOST)
    port = merged.pop("port", DEFAULT_PORT)
    merged["url"] = normalise_url(merged.get("url") or f"{host}:{port}")
    if merged.get("baseline_url"):
        merged["baseline_url"] = normalise_url(merged["baseline_url"])
        if merged["baseline_url"] == merged["url"]:
            raise TargetError("--baseline-url is the monitored server itself")
    if merged["url"] in merged.get("metrics_url", ()):
        raise TargetError(
            "--metrics-url lists the monitored server itself: give the workers behind it"
        )
    known = {f.name for f in fields(MonitorConfig)}
    return MonitorConfig(**{k: v for k, v in merged.items() if k in known})
