"""Monitor settings: defaults < TOML file < SPECMON_* environment < flags, every bad value named."""

from __future__ import annotations

from pathlib import Path

import pytest

from specmon.cli import parse_args
from specmon.cli.monitor import config_from_args
from specmon.config import load_config
from specmon.errors import TargetError


def _load(tmp_path: Path, flags: dict[str, object], env: dict[str, str], toml: str = "") -> object:
    path = tmp_path / "config.toml"
    path.write_text(toml)
    return load_config(flags, config_path=str(path), environ=env)


def test_defaults(tmp_path: Path) -> None:
    config = _load(tmp_path, {}, {})
    assert config.url == "http://127.0.0.1:30000"  # type: ignore[attr-defined]
    assert config.interval == 1.0  # type: ignore[attr-defined]
    assert config.probe is True  # type: ignore[attr-defined]


def test_layers_in_order(tmp_path: Path) -> None:
    toml = 'host = "file-host"\nport = 1\ninterval = 5\nprobe_every = 30\ntheme = "specmon-light"\n'
    env = {"SPECMON_PORT": "2", "SPECMON_INTERVAL": "3", "SPECMON_NO_SUCH": "x"}
    config = _load(tmp_path, {"interval": 0.5, "probe": None}, env, toml)
    assert config.url == "http://file-host:2"  # type: ignore[attr-defined]
    assert config.interval == 0.5  # type: ignore[attr-defined]
    assert config.probe_every == 30  # type: ignore[attr-defined]
    assert config.theme == "specmon-light"  # type: ignore[attr-defined]


def test_a_url_in_a_higher_layer_replaces_host_and_port(tmp_path: Path) -> None:
    config = _load(tmp_path, {"url": "https://gpu-box:8443"}, {}, 'host = "a"\nport = 1\n')
    assert config.url == "https://gpu-box:8443"  # type: ignore[attr-defined]


def test_specmon_table_is_accepted(tmp_path: Path) -> None:
    config = _load(tmp_path, {}, {}, '[specmon]\nbaseline_url = "10.0.0.2:8001"\n')
    assert config.baseline_url == "http://10.0.0.2:8001"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("flags", "env", "toml", "message"),
    [
        ({}, {}, "interval = 0", "config file .*: interval: must be between 0.1 and 60"),
        ({}, {}, "colour = 1", "unknown setting\\(s\\) colour"),
        ({}, {}, "interval = ", "is not valid TOML"),
        ({}, {"SPECMON_PROBE": "maybe"}, "", "environment: probe: not a boolean"),
        ({}, {"SPECMON_PROBE_TOKENS": "1.5"}, "", "environment: probe_tokens"),
        ({"url": "x:1", "host": "y"}, {}, "", "command line: give either a URL or host/port"),
        ({"baseline_url": "127.0.0.1:30000"}, {}, "", "is the monitored server itself"),
        ({"url": "ftp://x"}, {}, "", "unsupported scheme"),
    ],
)
def test_bad_values_name_their_layer(
    tmp_path: Path, flags: dict[str, object], env: dict[str, str], toml: str, message: str
) -> None:
    with pytest.raises(TargetError, match=message):
        _load(tmp_path, flags, env, toml)


def test_a_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="does not exist"):
        load_config({}, config_path=str(tmp_path / "nope.toml"), environ={})


FLEET = """
probe_every = 5
[[targets]]
url = "10.0.0.1:30000"
baseline_url = "10.0.0.2:30000"
name = "box-1"
[[targets]]
url = "https://10.0.0.3:8443"
"""


def test_targets_of_the_config_file_each_with_its_baseline(tmp_path: Path) -> None:
    config = _load(tmp_path, {}, {}, FLEET)
    targets = config.targets  # type: ignore[attr-defined]
    assert [(t.url, t.baseline_url, t.label) for t in targets] == [
        ("http://10.0.0.1:30000", "http://10.0.0.2:30000", "box-1"),
        ("https://10.0.0.3:8443", None, "https://10.0.0.3:8443"),
    ]
    assert config.probe_every == 5  # type: ignore[attr-defined]


def test_urls_on_the_command_line_replace_the_files_targets(tmp_path: Path) -> None:
    several = {"targets": [{"url": "a:1"}, {"url": "b:2"}]}
    config = _load(tmp_path, several, {}, FLEET)
    assert [t.url for t in config.targets] == ["http://a:1", "http://b:2"]  # type: ignore[attr-defined]
    one = _load(tmp_path, {"url": "c:3"}, {}, FLEET)
    assert [t.url for t in one.targets] == ["http://c:3"]  # type: ignore[attr-defined]
    assert one.fleet == ()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[[targets]]\nname = 'x'\n", "target 1: no url"),
        ("[[targets]]\nurl = 'a:1'\ncolour = 1\n", "target 1: unknown key\\(s\\) colour"),
        ("[[targets]]\nurl = 'a:1'\n[[targets]]\nurl = 'http://a:1'\n", "target 2: .* twice"),
        ("[[targets]]\nurl = 'a:1'\nbaseline_url = 'a:1'\n", "baseline_url is the server"),
        ("targets = 3\n", "targets must be an array of tables"),
        ("url = 'a:1'\n[[targets]]\nurl = 'b:1'\n", "give either targets .* or url"),
        ("[[targets]]\nurl = 'ftp://a'\n", "target 1: unsupported scheme"),
    ],
)
def test_bad_targets_are_named(tmp_path: Path, toml: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        _load(tmp_path, {}, {}, toml)


def test_one_baseline_url_for_several_targets_is_refused(tmp_path: Path) -> None:
    toml = "[[targets]]\nurl = 'a:1'\n[[targets]]\nurl = 'b:1'\n"
    with pytest.raises(TargetError, match="give each its own baseline_url"):
        _load(tmp_path, {}, {"SPECMON_BASELINE_URL": "c:1"}, toml)


# flag -> (a value at the edge of its range, one beyond it): one table (`SETTINGS`) for all layers.
LIMITS = {
    "--interval": ("0.1", "0"),
    "--probe-every": ("3600", "0.5"),
    "--probe-tokens": ("100000", "100001"),
    "--baseline-runs": ("100", "101"),
    "--max-age": ("604800", "604801"),  # 7 days; the flag alone stopped at 3600
    "--port": ("65535", "65536"),
    "--connect-timeout": ("0.01", "0"),
    "--read-timeout": ("3600", "3601"),
}


@pytest.mark.parametrize("flag", LIMITS)
def test_a_flag_takes_what_the_environment_and_the_file_take(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = flag.removeprefix("--").replace("-", "_")
    edge, beyond = LIMITS[flag]
    env = f"SPECMON_{name.upper()}"
    monkeypatch.delenv(env, raising=False)
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    from_flag = config_from_args(parse_args([flag, edge, "--config", str(empty)]))
    assert from_flag == _load(tmp_path, {}, {env: edge}) != _load(tmp_path, {}, {})
    assert from_flag == _load(tmp_path, {}, {}, f"{name} = {edge}")
    with pytest.raises(TargetError) as from_env:
        _load(tmp_path, {}, {env: beyond})
    with pytest.raises(TargetError) as from_file:
        _load(tmp_path, {}, {}, f"{name} = {beyond}")
    why = str(from_env.value).removeprefix(f"environment: {name}: ")
    assert str(from_file.value).endswith(f": {name}: {why}")
    assert f"between {edge}" in why or f"and {edge}" in why  # the range it states is the real one
    with pytest.raises(SystemExit):
        parse_args([flag, beyond])
    assert capsys.readouterr().err.endswith(f"error: argument {flag}: {why}\n")


def test_commands_take_the_same_max_age() -> None:
    assert parse_args(["check", "gpu-box:8000", "--max-age", "7200"]).max_age == 7200
    assert parse_args(["snapshots", "export", "--max-age", "86400"]).max_age == 86400
