"""The API key never leaves: every surface runs with a known key against servers that echo it
back (SGLang's server info returns `api_key` and the launch command in plain text), and
everything specmon wrote or printed is searched for it: stdout, stderr, the store files
(-wal and -shm included, read while the store is open), exports, SVG screenshots of each screen,
and a crash report (the process list: tests/faults/test_fault_process.py)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from fault_cases import FAST
from live_helpers import until
from textual.screen import Screen

from specmon.cli import main
from specmon.config import MonitorConfig, Targets
from specmon.session.baselines import BaselineOrigin
from specmon.sim import SimThread
from specmon.sources.http import ApiKey, Target
from specmon.store import Store
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
            *(["snapshots", "--db", str(db), "export", "--format", fmt, "-o", f"export.{fmt}"]
              for fmt in ("md", "csv", "json")),
        ):  # fmt: skip
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
    config = MonitorConfig(url=spec.url, baseline_url=plain.url, interval=0.5, probe_every=0.5,
                           probe_tokens=24, baseline_runs=2, connect_timeout=10.0,
                           read_timeout=10.0)  # fmt: skip
    # Generous timeouts: this test is about what is shown, and it must hold on a loaded machine.
    targets = Targets(*(Target(url, key, 10.0, 10.0) for url in (spec.url, plain.url)))
    app = SpecmonApp(config, targets, store)
    async with app.run_test(size=(160, 50)) as pilot:

        async def open_screen(key_name: str, kind: type[Screen[object]]) -> None:
            await pilot.press(key_name)
            await until(pilot, lambda: isinstance(app.screen, kind) and app.screen.is_mounted)

        await until(pilot, lambda: app.live.server.info is not None and len(app.live.probes) > 1)
        await pilot.press("b")
        await until(pilot, lambda: app.live.baseline.origin == BaselineOrigin.BASELINE_SERVER)
        await until(pilot, lambda: not app.bench_running())  # else `s` says "busy"
        await open_screen("s", LabelPrompt)
        await until(pilot, lambda: app.focused is not None)  # the label's input
        await pilot.press("m", "enter")
        await until(pilot, lambda: any("snapshot" in e.text for e in app.live.events))
        assert any("snapshot #" in e.text for e in app.live.events), list(app.live.events)
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
        app = SpecmonApp(config, Targets(target), store)

        def crash(_: object) -> None:
            raise RuntimeError("a bug")

        app.live.on_sample = crash  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="a bug"):
            async with app.run_test() as pilot:
                await until(pilot, lambda: app.return_code is not None)
    report = capfd.readouterr()
    assert "RuntimeError: a bug" in report.err
    assert "Reading(" in report.err  # the frames' locals were printed
    assert KEY not in report.out + report.err
