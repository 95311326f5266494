"""Behind a router: `--metrics-url`, `metrics_url` in the config file and `[[targets]]`, and
SPECMON_METRICS_URL name the workers; every bad value is refused, naming where it came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from specmon.cli import parse_args
from specmon.cli.monitor import config_from_args, targets_of
from specmon.config import MonitorConfig, load_config
from specmon.errors import TargetError
from specmon.target import Target


def _load(
    tmp_path: Path, flags: dict[str, object], env: dict[str, str], toml: str = ""
) -> MonitorConfig:
    path = tmp_path / "config.toml"
    path.write_text(toml)
    return load_config(flags, config_path=str(path), environ=env)


def test_the_flag_repeated_names_the_workers_and_the_target_carries_them(tmp_path: Path) -> None:
    path = tmp_path / "none.toml"
    path.write_text("")
    args = parse_args(
        ["--url", "router:8000", "--metrics-url", "w1:30000", "--metrics-url", "http://w2:30000/",
         "--config", str(path)]
    )  # fmt: skip
    config = config_from_args(args)
    assert config.url == "http://router:8000"
    assert config.metrics_url == ("http://w1:30000", "http://w2:30000")
    assert targets_of(config).server.metrics_urls == config.metrics_url
    assert config.targets[0].metrics_url == config.metrics_url


def test_the_file_takes_a_list_and_the_environment_commas(tmp_path: Path) -> None:
    toml = 'url = "router:8000"\nmetrics_url = ["w1:1", "w2:2"]\n'
    assert _load(tmp_path, {}, {}, toml).metrics_url == ("http://w1:1", "http://w2:2")
    env = {"SPECMON_METRICS_URL": "w3:3, w4:4"}
    assert _load(tmp_path, {}, env, toml).metrics_url == ("http://w3:3", "http://w4:4")


def test_a_target_table_names_its_own_workers(tmp_path: Path) -> None:
    toml = (
        "[[targets]]\nurl = 'r1:8000'\nmetrics_url = ['w1:1', 'w2:2']\n"
        "[[targets]]\nurl = 'plain:30000'\n"
    )
    config = _load(tmp_path, {}, {}, toml)
    assert [t.metrics_url for t in config.targets] == [("http://w1:1", "http://w2:2"), ()]


@pytest.mark.parametrize(
    ("flags", "env", "toml", "message"),
    [
        ({"metrics_url": ["w1:1", "w1:1"]}, {}, "", "metrics_url: http://w1:1 is given twice"),
        ({"metrics_url": ["ftp://w"]}, {}, "", "metrics_url: unsupported scheme"),
        ({}, {}, "metrics_url = 3", "metrics_url: not a list of addresses"),
        ({}, {}, "metrics_url = []", "metrics_url: not a list of addresses"),
        ({}, {"SPECMON_METRICS_URL": "w/x:1"}, "", "environment: metrics_url: "),
        ({"url": "w:1", "metrics_url": ["w:1"]}, {}, "", "lists the monitored server itself"),
        (
            {},
            {},
            "[[targets]]\nurl = 'a:1'\nmetrics_url = ['a:1']\n",
            "target 1: its metrics_url lists the server itself",
        ),
        (
            {"metrics_url": ["w:1"]},
            {},
            "[[targets]]\nurl = 'a:1'\n[[targets]]\nurl = 'b:1'\n",
            "metrics_url names one server's workers",
        ),
    ],
)
def test_bad_worker_addresses_are_refused(
    tmp_path: Path, flags: dict[str, object], env: dict[str, str], toml: str, message: str
) -> None:
    with pytest.raises(TargetError, match=message):
        _load(tmp_path, flags, env, toml)


def test_workers_with_several_urls_on_the_command_line_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "none.toml"
    path.write_text("")
    args = parse_args(
        ["--url", "a:1", "--url", "b:1", "--metrics-url", "w:1", "--config", str(path)]
    )
    with pytest.raises(TargetError, match="--metrics-url names one server's workers"):
        config_from_args(args)


def test_another_server_with_the_same_credentials_is_read_without_the_workers() -> None:
    router = Target("http://router:8000", read_timeout=9.0, metrics_urls=("http://w1:1",))
    assert router.at("http://router:8000") == router
    baseline = router.at("http://plain:30000")
    assert (baseline.url, baseline.read_timeout, baseline.metrics_urls) == (
        "http://plain:30000",
        9.0,
        (),
    )
