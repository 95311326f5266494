"""Options several commands share work before and after the command (and the `snapshots`
action); a top-level option a command does not take is refused, never silently unused."""

from __future__ import annotations

from pathlib import Path

import pytest

from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.cli import main, parse_args
from specmon.cli.monitor import config_from_args
from specmon.sim import SimConfig, SimThread
from specmon.target import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT

# option -> (what is typed, dest, what it parses to); None typed: a flag.
VALUES: dict[str, tuple[str | None, str, object]] = {
    "--db": ("/elsewhere/specmon.db", "db", "/elsewhere/specmon.db"),
    "--gpu-metrics": ("http://gpu-box:9400/metrics", "gpu_metrics", "http://gpu-box:9400/metrics"),
    "--api-key-env": ("MY_KEY", "api_key_env", "MY_KEY"),
    "--api-key-file": ("/keys/server", "api_key_file", "/keys/server"),
    "--insecure": (None, "insecure", True),
    "--connect-timeout": ("7", "connect_timeout", 7.0),
    "--read-timeout": ("9", "read_timeout", 9.0),
    "--probe-tokens": ("64", "probe_tokens", 64),
    "--max-age": ("60", "max_age", 60.0),
    "--probe-every": ("4", "probe_every", 4.0),
    "--theme": ("specmon-light", "theme", "specmon-light"),
}
SERVER = ["--", "python", "-m", "specmon.sim", "--port", "30007"]  # what `launch` and `ab` launch
CONNECTION = ("--api-key-env", "--api-key-file", "--insecure", "--connect-timeout",
              "--read-timeout")  # fmt: skip
# name -> (its command line without options, the shared options it takes)
COMMANDS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "bench": (["bench", "gpu-box:8000"], ("--db", "--gpu-metrics", *CONNECTION)),
    "check": (
        ["check", "gpu-box:8000"],
        ("--db", "--gpu-metrics", *CONNECTION, "--probe-tokens", "--max-age"),
    ),
    "whatif": (["whatif", "gpu-box:8000"], ("--db", "--gpu-metrics", *CONNECTION, "--max-age")),
    "snapshots list": (["snapshots", "list"], ("--db",)),
    "snapshots show": (["snapshots", "show", "3"], ("--db",)),
    "snapshots compare": (["snapshots", "compare", "1", "2"], ("--db", "--max-age")),
    "snapshots export": (["snapshots", "export"], ("--db", "--max-age")),
    "demo": (["demo"], ("--probe-every", "--probe-tokens", "--theme", "--db")),
    "exporter": (
        ["exporter"],
        ("--db", "--gpu-metrics", *CONNECTION, "--probe-tokens", "--max-age", "--probe-every"),
    ),
    "launch": (
        ["launch", *SERVER],
        (
            "--db",
            "--gpu-metrics",
            *CONNECTION,
            "--probe-tokens",
            "--max-age",
            "--probe-every",
            "--theme",
        ),
    ),
    "ab --watch": (
        ["ab", "--watch", *SERVER],
        ("--db", *CONNECTION, "--probe-tokens", "--max-age", "--probe-every", "--theme"),
    ),
}
CASES = [(name, option) for name, (_, options) in COMMANDS.items() for option in options]


def _typed(option: str) -> list[str]:
    value = VALUES[option][0]
    return [option] if value is None else [option, value]


def _positions(command: list[str], option: list[str]) -> dict[str, list[str]]:
    end = command.index("--") if "--" in command else len(command)  # the server's own from --
    positions = {"before": [*option, *command], "after": [*command[:end], *option, *command[end:]]}
    if command[0] == "snapshots":
        positions["between"] = [command[0], *option, *command[1:]]
    return positions


@pytest.mark.parametrize(("name", "option"), CASES, ids=[f"{n} {o}" for n, o in CASES])
def test_shared_option_anywhere(name: str, option: str) -> None:
    command = COMMANDS[name][0]
    _, dest, expected = VALUES[option]
    for where, argv in _positions(command, _typed(option)).items():
        args = parse_args(argv)
        assert getattr(args, dest) == expected, (where, argv)
        if "--" in command:
            assert args.server_command == SERVER, (where, argv)


def test_defaults_when_given_nowhere() -> None:
    bench = parse_args(["bench", "gpu-box:8000"])
    assert (bench.db, bench.gpu_metrics, bench.api_key_env, bench.insecure) == (
        None,
        None,
        None,
        False,
    )
    assert (bench.connect_timeout, bench.read_timeout) == (
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_READ_TIMEOUT,
    )
    check = parse_args(["check", "gpu-box:8000"])
    # None: not given, so a baseline's protocol decides quietly (DEFAULT_CHECK_TOKENS without one).
    assert (check.probe_tokens, check.max_age) == (None, DEFAULT_MAX_AGE_S)
    assert parse_args(["snapshots", "export"]).max_age == DEFAULT_MAX_AGE_S
    demo = parse_args(["demo"])
    # The one default protocol (probe_prompts.DEFAULT_MAX_TOKENS): the demo's baseline is
    # everyone's.
    assert (demo.probe_every, demo.probe_tokens, demo.theme) == (3.0, 256, "specmon-dark")


def test_given_before_and_after_the_later_wins() -> None:
    argv = ["--db", "/a", "snapshots", "--db", "/b", "list", "--db", "/c"]
    assert parse_args(argv).db == "/c"


@pytest.mark.parametrize(
    ("argv", "refused", "command"),
    [
        (["--config", "specmon.toml", "agent"], "--config", "agent"),  # bench takes it: its db
        (["--url", "gpu-box:8000", "check", "gpu-box:8001"], "--url", "check"),
        (["--port", "9500", "agent"], "--port", "agent"),  # the LLM server's, not the agent's
        (["--max-age", "60", "snapshots", "list"], "--max-age", "snapshots list"),
        (["snapshots", "--max-age", "60", "show", "1"], "--max-age", "snapshots show"),
        (["--no-probe", "demo"], "--no-probe", "demo"),
        (["--theme", "nord", "exporter"], "--theme", "exporter"),
        # These two were a TypeError: the server command after `--` hid the command's name.
        (["--url", "gpu-box:8000", "launch", *SERVER], "--url", "launch"),
        (["--host", "gpu-box", "ab", "--dry-run", *SERVER], "--host", "ab"),
    ],
)
def test_top_level_option_a_command_does_not_take(
    argv: list[str], refused: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(
        f"specmon: error: {refused} before the command does not apply to `specmon {command}`\n"
    )


def test_agent_options_after_it() -> None:
    args = parse_args(["agent", "--port", "9500", "--host", "127.0.0.1"])
    assert (args.listen_port, args.listen_host) == (9500, "127.0.0.1")


@pytest.mark.slow
def test_db_before_the_command_is_the_store_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`specmon --db X bench|check|snapshots …` used the default store, silently."""
    db = tmp_path / "db"
    with SimThread(SimConfig(plain_step_ms=1.0, cycle_ms=2.0, ttft_ms=2.0, seed=5)) as sim:
        bench = ["bench", sim.url, "--runs", "1", "--warmup", "0", "--max-tokens", "20"]
        assert main(["--db", str(db), *bench]) == 0
        assert main(["--db", str(db), "check", sim.url, "--probe-tokens", "20"]) == 0
    capsys.readouterr()
    for argv in (["--db", str(db), "snapshots", "list"], ["snapshots", "list", "--db", str(db)]):
        assert main(argv) == 0
        header, *rows = capsys.readouterr().out.splitlines()
        assert header.split() == ["id", "taken", "server", "speculation", "decode", "runs"]
        assert len(rows) == 1  # the one bench above


def test_launch_passes_the_dashboard_settings_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """`launch`'s dashboard had only SPECMON_* and the config file: its flags were refused."""
    monkeypatch.setenv("SPECMON_INTERVAL", "2")
    monkeypatch.setenv("SPECMON_PROBE_TOKENS", "64")
    monkeypatch.setenv("SPECMON_URL", "elsewhere:8000")  # the launched server is the one watched
    argv = [
        "--probe-every",
        "3",
        "launch",
        "--theme",
        "specmon-light",
        "--probe-tokens",
        "32",
        "--no-probe",
        "--max-age",
        "60",
        *SERVER,
    ]
    config = config_from_args(parse_args(argv), launched="http://127.0.0.1:30007")
    assert (config.url, config.interval, config.probe_every, config.probe) == (
        "http://127.0.0.1:30007",
        2.0,
        3.0,
        False,
    )
    assert (config.probe_tokens, config.max_age, config.theme) == (32, 60.0, "specmon-light")


@pytest.mark.parametrize("where", ["before", "after"])
def test_ab_takes_the_dashboard_settings_only_with_watch(
    where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _positions(["ab", "--dry-run", *SERVER], ["--theme", "specmon-light"])[where]
    assert main(argv) == 2
    assert capsys.readouterr().err.endswith(
        "specmon: error: --theme is the dashboard's: give it with --watch, or leave it out\n"
    )


def test_ab_takes_max_age_for_its_pairs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ab", "--dry-run", "--max-age", "3600", *SERVER]) == 0
    assert parse_args(["ab", "--max-age", "3600", *SERVER]).max_age == 3600.0
    assert "specmon: error" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "prog"),
    [
        (["bench", "gpu-box:8000", "--bogus"], "specmon bench"),  # was the top-level usage
        (["snapshots", "list", "--bogus"], "specmon snapshots list"),
        (["launch", "--bogus", *SERVER], "specmon launch"),
        (["--bogus"], "specmon"),
    ],
)
def test_an_unknown_option_is_refused_with_its_command_usage(
    argv: list[str], prog: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    # Two lines: a short usage (argparse's block of every option was a screenful) and the error.
    usage, error = err.splitlines()
    assert usage.startswith(f"usage: {prog} [options]") and usage.endswith(f"(see {prog} --help)")
    assert error in (
        f"{prog}: error: unrecognized arguments: --bogus",
        f"{prog}: error: unrecognized option --bogus",  # before any command
    )


def test_the_short_usage_shows_what_is_not_an_option(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, usage in (
        (["bench"], "usage: specmon bench [options] URL  (see specmon bench --help)"),
        (["chekc"], "usage: specmon [options] [URL | COMMAND ...]  (see specmon --help)"),
    ):
        with pytest.raises(SystemExit):
            parse_args(argv)
        assert capsys.readouterr().err.splitlines()[0] == usage


def test_help_shows_the_command_as_optional(capsys: pytest.CaptureFixture[str]) -> None:
    """`COMMAND ...` read as required: without one, specmon opens the dashboard."""
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert capsys.readouterr().out.startswith("usage: specmon [options] [URL | COMMAND ...]\n")


@pytest.mark.parametrize(
    ("argv", "urls"),
    [
        (["127.0.0.1:47311"], ["127.0.0.1:47311"]),
        (["--theme", "specmon-light", "http://gpu-box:8000"], ["http://gpu-box:8000"]),
        (["gpu-a:8000", "gpu-b:8000"], ["gpu-a:8000", "gpu-b:8000"]),  # the fleet, as --url twice
        (["localhost", "--interval", "2"], ["localhost"]),
    ],
)
def test_an_address_where_a_command_would_be_is_the_dashboard_s_url(
    argv: list[str], urls: list[str]
) -> None:
    args = parse_args(argv)
    assert args.command is None and args.dashboard and args.url == urls


def test_an_option_value_that_looks_like_an_address_stays_the_option_s() -> None:
    args = parse_args(["--baseline-url", "gpu-b:8000", "gpu-a:8000"])
    assert (args.baseline_url, args.url) == ("gpu-b:8000", ["gpu-a:8000"])


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--budget", "5", "check", "u"], "--budget is an option of `specmon check`: give it after "
         "the command (specmon check … --budget …)"),
        (["--runs=3", "bench", "u"], "--runs is an option of `specmon bench`, `specmon whatif`, "
         "`specmon ab`: give"),
        (["--bogus", "5", "check", "u"], "unrecognized option --bogus"),
    ],
)  # fmt: skip
def test_a_command_s_option_before_the_command_says_where_it_goes(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was `invalid choice: '5'`: the option's value taken for the command."""
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert f"specmon: error: {said}" in capsys.readouterr().err


def test_a_pasted_api_path_is_dropped_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse_args(["check", "http://gpu-box:8000/v1"])
    assert capsys.readouterr().err == (
        "specmon: note: http://gpu-box:8000/v1 is taken as http://gpu-box:8000: the server's "
        "base address (/v1 is one of its API paths)\n"
    )
    assert args.server == "http://gpu-box:8000/v1"  # normalised where it is read (target_of)


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "u", "--max-tokens"],
        ["whatif", "u", "--max-tokens"],
        ["ab", "--dry-run", "--max-tokens"],
        ["check", "u", "--probe-tokens"],
        ["--probe-tokens"],
    ],
    ids=["bench", "whatif", "ab", "check", "dashboard"],
)
def test_every_run_s_token_count_has_one_range(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A bench's runs and a probe's are timed alike: the same 2–100000 tokens everywhere
    (`bench --max-tokens 200000` was taken while `--probe-tokens` stopped at 100000)."""
    for given in ("1", "100001"):
        with pytest.raises(SystemExit) as exited:
            parse_args([*argv, given])
        assert exited.value.code == 2
        assert f"must be between 2 and 100000: {given}" in capsys.readouterr().err
    assert parse_args([*argv, "100000"]) is not None
