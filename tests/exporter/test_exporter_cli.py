"""`specmon exporter`'s command line: targets from flags and the config file, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from specmon.cli import main, parse_args
from specmon.cli.exporter import target_matches, target_pattern
from specmon.cli.monitor import config_from_args


def test_repeated_url_is_a_fleet_after_or_before_the_command() -> None:
    for argv in (
        ["exporter", "--url", "a:1", "--url", "b:2"],
        ["--url", "a:1", "--url", "b:2", "exporter"],
    ):
        args = parse_args(argv)
        config = config_from_args(args)
        assert [t.url for t in config.targets] == ["http://a:1", "http://b:2"], argv
        assert args.listen == ("127.0.0.1", 9835) and not args.multi_target


def test_targets_from_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[[targets]]\nurl = 'a:1'\nbaseline_url = 'a:2'\n[[targets]]\nurl = 'b:1'\n")
    config = config_from_args(parse_args(["exporter", "--config", str(path)]))
    assert [(t.url, t.baseline_url) for t in config.targets] == [
        ("http://a:1", "http://a:2"),
        ("http://b:1", None),
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["exporter", "--url", "a:1", "--url", "b:1", "--baseline-url", "c:1"],
            "--baseline-url names one server's baseline server: with several --url",
        ),
        (["exporter", "--any-target"], "--any-target is for /probe?target=URL"),
        (["exporter", "--allow-target", "a:1"], "--allow-target is for /probe?target=URL"),
        (["exporter", "--url", "a:1", "--port", "3"], "give either --url or --host/--port"),
        (["--url", "a:1", "--url", "b:1", "--baseline-url", "c:1"], "with several --url"),
        (["web", "--url", "a:1", "--url", "b:1"], "specmon web serves one server's dashboard"),
    ],
)
def test_bad_combinations_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main([*argv, "--config", str(_empty(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specmon: error: ") and message in err
    assert err.count("\n") == 1


def test_a_bad_listen_address_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(["exporter", "--listen", "nowhere"])
    assert exited.value.code == 2
    assert "not HOST:PORT: 'nowhere'" in capsys.readouterr().err


def test_a_taken_port_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(
            [
                "exporter",
                "--url",
                "127.0.0.1:9",
                "--listen",
                f"127.0.0.1:{port}",
                "--db",
                str(tmp_path / "db"),
                "--config",
                str(_empty(tmp_path)),
            ]
        )
    assert code == 1
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and err.count("\n") == 1


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.toml"
    path.write_text("")
    return path


def test_allow_target_patterns_match_hosts_and_ports() -> None:
    patterns = [target_pattern(p) for p in ("10.1.*", "*.GPU.example:8000", "[::1]:30*")]
    matched = {
        "http://10.1.2.3:9": True,
        "http://10.2.2.3:9": False,
        "http://10.1.evil.example:9": False,  # an address pattern matches addresses only
        "http://a.gpu.example:8000": True,
        "http://a.gpu.example:8001": False,
        "http://gpu.example.evil.example:8000": False,
        "http://[::1]:30000": True,
        "https://a.gpu.example": False,  # port 443
    }
    assert {url: target_matches(url, patterns) for url in matched} == matched


@pytest.mark.parametrize("pattern", ["http://10.1.*", "10.1.*/metrics", "host:port", ""])
def test_a_bad_allow_target_pattern_is_a_usage_error(
    pattern: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(["exporter", "--allow-target", pattern])
    assert exited.value.code == 2
    assert (
        f"not a HOST or HOST:PORT pattern (no scheme or path; * and ? as wildcards): {pattern!r}"
        in (capsys.readouterr().err)
    )
