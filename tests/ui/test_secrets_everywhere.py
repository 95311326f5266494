"""The API key never leaves: every surface runs with a known key against servers that echo it
back (SGLang's server info returns `api_key` and the launch command in plain text), and
everything specmon wrote or printed is searched for it: stdout, stderr, the store files
(-wal and -shm included, read while the store is open), exports, SVG screenshots of each screen,
and a crash report (the process list: tests/faults/test_fault_process.py)."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from ab_helpers import free_port
from fault_cases import FAST
from live_helpers import until
from textual.screen import Screen

from specmon.cli import main
from specmon.config import MonitorConfig, Targets
from specmon.launch.process import LaunchFailed, ServerProcess
from specmon.launch.split import Launch
from specmon.session.baselines import BaselineOrigin
from specmon.session.server_session import dashboard_session
from specmon.sim import SimThread
from specmon.storage.store import Store
from specmon.target import ApiKey, Target
from specmon.ui.app import SpecmonApp
from specmon.ui.screens.comparison import ComparisonScreen
from specmon.ui.screens.diagnostics import DiagnosticsScreen
from specmon.ui.screens.help import HelpScreen
from specmon.ui.screens.label_prompt import LabelPrompt

KEY = "sk-specmon-SECRET-4f9c2e7a"
PLAIN = replace(FAST, speculative_algorithm=None, api_key=KEY)
SPEC = replace(FAST, api_key=KEY)


def _leaks(root: Path) -> list[str]:
    """Files under `root` that hold the key."""
    return [str(p) for p in root.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_no_surface_shows_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECMON_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)  # the dashboard's exports land here
    db = tmp_path / "store" / "specmon.db"
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o644)
    printed: list[str] = []
    with SimThread(SPEC) as spec, SimThread(PLAIN) as plain:
        echoed = httpx.get(spec.url + "/server_info", headers={"Authorization": f"Bearer {KEY}"})
        assert KEY in echoed.text  # the server does echo it: the test can catch a leak
        bench = ["--runs", "2", "--warmup", "0", "--max-tokens", "24", "--db", str(db)]
        for args in (
            ["bench", plain.url, *bench, "--json"],
            ["bench", spec.url, *bench, "--label", "spec"],
            ["check", spec.url, "--db", str(db), "--probe-tokens", "24", "--json"],
            ["check", spec.url, "--db", str(db), "--probe-tokens", "24"],
            ["check", spec.url, "--api-key-file", str(key_file), "--probe-tokens", "24"],
            ["snapshots", "--db", str(db), "list"],
            ["snapshots", "--db", str(db), "show", "1", "--json"],
            ["snapshots", "--db", str(db), "show", "2"],
            ["snapshots", "--db", str(db), "compare", "1", "2"],
            *(
                ["snapshots", "--db", str(db), "export", "--format", fmt, "-o", f"export.{fmt}"]
                for fmt in ("md", "csv", "json")
            ),
        ):
            code = main(args)
            out = capsys.readouterr()
            # check may find speculation losing to the baseline on a loaded machine: exit 1
            assert code == 0 or (args[0] == "check" and code == 1), (args, out.out, out.err)
            printed += [out.out, out.err]
        assert "readable by others" in printed[9]  # the loose key file was warned about
        (tmp_path / "svg").mkdir()
        with Store(db) as store:
            asyncio.run(_dashboard(spec, plain, store, tmp_path / "svg"))
            assert (db.parent / "specmon.db-wal").exists()
            assert _leaks(tmp_path) == [str(key_file)]  # only the key file itself
    for text in printed:
        assert KEY not in text
    assert len(list((tmp_path / "svg").glob("*.svg"))) == 6
    assert len(list(tmp_path.glob("specmon-comparison-*"))) == 3


async def _dashboard(spec: SimThread, plain: SimThread, store: Store, shots: Path) -> None:
    """Every screen of the dashboard, a baseline and a snapshot taken, exports, screenshots.

    Each key waits for what the one before it opened: under load a screen mounts late, and a
    key sent before it would go to the screen below.
    """
    key = ApiKey(KEY, "env SPECMON_API_KEY")
    config = MonitorConfig(
        url=spec.url,
        baseline_url=plain.url,
        interval=0.5,
        probe_every=0.5,
        probe_tokens=24,
        baseline_runs=2,
        connect_timeout=10.0,
        read_timeout=10.0,
    )
    # Generous timeouts: this test is about what is shown, and it must hold on a loaded machine.
    targets = Targets(*(Target(url, key, 10.0, 10.0) for url in (spec.url, plain.url)))
    app = SpecmonApp(dashboard_session(config, targets, store))
    async with app.run_test(size=(160, 50)) as pilot:

        async def open_screen(key_name: str, kind: type[Screen[object]]) -> None:
            await pilot.press(key_name)
            await until(pilot, lambda: isinstance(app.screen, kind) and app.screen.is_mounted)

        await until(
            pilot,
            lambda: app.session.live.server.info is not None and len(app.session.live.probes) > 1,
        )
        await pilot.press("b")
        await until(
            pilot, lambda: app.session.live.baseline.origin == BaselineOrigin.BASELINE_SERVER
        )
        await until(pilot, lambda: not app.bench_running())  # else `s` says "busy"
        await open_screen("s", LabelPrompt)
        await until(pilot, lambda: app.focused is not None)  # the label's input
        await pilot.press("m", "enter")
        await until(pilot, lambda: any("snapshot" in e.text for e in app.session.live.events))
        assert any("snapshot #" in e.text for e in app.session.live.events), list(
            app.session.live.events
        )
        app.save_screenshot("main-160.svg", str(shots))
        await pilot.resize_terminal(80, 24)
        app.save_screenshot("main-80.svg", str(shots))
        for key_name, kind in (("i", DiagnosticsScreen), ("question_mark", HelpScreen)):
            await open_screen(key_name, kind)
            app.save_screenshot(f"{kind.__name__}.svg", str(shots))
            await pilot.press("escape")
            await until(pilot, lambda: len(app.screen_stack) == 1)
        await open_screen("c", ComparisonScreen)
        app.save_screenshot("ComparisonScreen.svg", str(shots))
        await pilot.press("e", "v", "j")
        await until(pilot, lambda: len(list(Path.cwd().glob("specmon-comparison-*"))) == 3)
        app.save_screenshot("exported.svg", str(shots))


async def test_a_crash_report_does_not_show_the_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Textual's crash report prints every frame's locals: none of them may reveal the key."""
    config = MonitorConfig(url="http://127.0.0.1:9", interval=0.1, probe=False)
    target = Target(config.url, ApiKey(KEY, "env SPECMON_API_KEY"))
    with Store(tmp_path / "db") as store:
        app = SpecmonApp(dashboard_session(config, Targets(target), store))

        def crash(_: object) -> None:
            raise RuntimeError("a bug")

        app.session.live.on_sample = crash  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="a bug"):
            async with app.run_test() as pilot:
                await until(pilot, lambda: app.return_code is not None)
    report = capfd.readouterr()
    assert "RuntimeError: a bug" in report.err
    assert "Reading(" in report.err  # the frames' locals were printed
    assert KEY not in report.out + report.err


def _sim_command(port: int, *key_words: str) -> list[str]:
    """A speculative simulator's launch command holding the key in `key_words` and in a
    variable before it (`env HF_TOKEN=KEY`)."""
    return [
        "env",
        f"HF_TOKEN={KEY}",
        sys.executable,
        "-m",
        "specmon.sim",
        "--plain-step-ms",
        "6",
        "--cycle-ms",
        "9",
        "--ttft-ms",
        "5",
        "--speculative-algorithm",
        "NGRAM",
        *key_words,
        "--port",
        str(port),
    ]


@pytest.fixture
def no_umask() -> Iterator[None]:
    """umask 0: files get the mode they are created with, nothing taken off."""
    before = os.umask(0)
    yield
    os.umask(before)


@pytest.mark.usefixtures("no_umask")
def test_ab_and_launch_never_show_a_key_in_the_server_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key in every form a command holds it: `--api-key K`, `--api-key=K`, a variable set
    for the server, and specmon's own SPECMON_API_KEY (which reaches the servers). What it
    writes is its owner's alone (0600) even under umask 0."""
    monkeypatch.setenv("SPECMON_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "ab.db"
    printed: list[str] = []
    runs = (
        ["ab", "--dry-run", "--", *_sim_command(free_port(), "--api-key", KEY)],
        [
            "ab",
            "--json",
            "--db",
            str(db),
            "--runs",
            "2",
            "--max-tokens",
            "32",
            "--rounds",
            "1",
            "--concurrency",
            "1",
            "--logs",
            str(tmp_path / "ab-logs"),
            "--",
            *_sim_command(free_port(), f"--api-key={KEY}"),
        ],
        *(
            ["snapshots", "--db", str(db), "export", "--format", fmt, "-o", f"ab.{fmt}"]
            for fmt in ("md", "csv", "json")
        ),
        ["snapshots", "--db", str(db), "show", "2", "--json"],
    )
    for args in runs:
        assert main(args) == 0, (args, capsys.readouterr())
        out = capsys.readouterr()
        printed += [out.out, out.err]
    assert '"speculative_command": "env HF_TOKEN=*** ' in printed[2]
    assert "--api-key=*** --port" in printed[2] and "--api-key *** --port" in printed[0]

    # `launch` says the same plan, starts the server (its log kept) and opens the dashboard,
    # which test_no_surface_shows_the_key covers: here it returns at once.
    monkeypatch.setattr("specmon.cli.launch.run_dashboard", lambda app: 0)
    logs = tmp_path / "launch-logs"
    assert (
        main(
            [
                "launch",
                "--db",
                str(db),
                "--logs",
                str(logs),
                "--",
                *_sim_command(free_port(), "--api-key", KEY),
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    printed += [out.out, out.err]
    assert "Speculative: env HF_TOKEN=*** " in out.out and "the speculative server is up" in out.out
    assert list(logs.glob("*.log"))
    for text in printed:
        assert KEY not in text
    assert _leaks(tmp_path) == []
    written = [db, *tmp_path.glob("ab.[mcj]*"), *tmp_path.glob("*-logs/*.log")]
    assert len(written) == 1 + 3 + 3  # the store, 3 exports, 3 servers' logs
    modes = {str(path): stat.S_IMODE(path.stat().st_mode) for path in written}
    assert modes == {str(path): 0o600 for path in written}
    assert {stat.S_IMODE(p.stat().st_mode) for p in tmp_path.glob("*-logs")} == {0o700}


async def test_a_failed_launch_shows_its_log_without_the_key(tmp_path: Path) -> None:
    """A server that dies at start: the error quotes its log's last lines, where SGLang has
    printed its settings, key included."""
    said = f"server_args=ServerArgs(model_path='m', api_key='{KEY}', max_new_tokens=4)"
    launch = Launch((sys.executable, "-c", f"print({said!r}); raise SystemExit(3)"))
    server = ServerProcess(launch, tmp_path / "server.log")
    server.start()
    with pytest.raises(LaunchFailed) as failed:
        await server.wait_healthy(f"http://127.0.0.1:{free_port()}", 60)
    assert "exited with status 3" in str(failed.value) and "api_key=*** " in str(failed.value)
    assert "max_new_tokens=4" in str(failed.value)  # not a credential: shown
    assert KEY not in str(failed.value)
