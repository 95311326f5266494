"""The fault matrix against the live dashboard: each fault is reported with its cause in the
events log, the keys answer while it lasts, and the dashboard recovers once it clears. And: the
terminal shrunk to 20x5 and back, TLS and `--insecure`, a store locked by another process."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fault_cases import CASES, FAST, IDS, TIMEOUT_S, Case, self_signed
from live_helpers import until

from specmon.config import MonitorConfig, Targets
from specmon.session import watch as app_module
from specmon.session.feed import LocalFeed
from specmon.session.server_session import dashboard_session
from specmon.sim import SimThread
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui.app import SpecmonApp


@pytest.fixture
def sim(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimThread]:
    monkeypatch.setattr(app_module, "INFO_EVERY_S", 0.2)  # info faults show within a tick
    with SimThread(FAST) as thread:
        yield thread


def _app(sim: SimThread, store: Store) -> SpecmonApp:
    config = MonitorConfig(
        url=sim.url,
        interval=0.1,
        probe_every=0.2,
        probe_tokens=24,
        connect_timeout=TIMEOUT_S,
        read_timeout=TIMEOUT_S,
    )
    target = Target(sim.url, connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S)
    return SpecmonApp(dashboard_session(config, Targets(target), store))


def _healthy(app: SpecmonApp, since: float = 0.0) -> bool:
    """Live, info and metrics read without error, and a probe finished after `since`."""
    view, sample = app._last_view, app.session.live.sample
    return (
        view is not None
        and sample is not None
        and view.identity.state == "live"
        and all(sample.readings[name].error is None for name in ("info", "metrics"))
        and app.session.live.probe_error is None
        and bool(app.session.live.probes)
        and app.session.live.probes[-1].t > since
    )


def _said(app: SpecmonApp, pattern: str) -> bool:
    return any(re.search(pattern, event.text) for event in app.session.live.events)


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_dashboard(case: Case, sim: SimThread, tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        app = _app(sim, store)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: _healthy(app))
            errors = [e for e in app.session.live.events if e.level == "error"]
            case.apply(sim.server.faults)
            applied = time.monotonic()
            if case.dashboard is not None:
                await until(pilot, lambda: _said(app, case.dashboard or ""))
            else:  # a probe and a few scrapes under the fault, and still live, nothing wrong
                seq = (
                    app.session.live.sample.readings["metrics"].seq
                    if app.session.live.sample
                    else 0
                )
                await until(
                    pilot,
                    lambda: (
                        _healthy(app, applied)
                        and app.session.live.sample is not None
                        and app.session.live.sample.readings["metrics"].seq > seq + 2
                    ),
                )
                assert [e for e in app.session.live.events if e.level == "error"] == errors
            await pilot.press("p")  # the keys answer while the fault lasts
            assert app.session.live.probe_paused
            await pilot.press("p")
            assert not app.session.live.probe_paused
            sim.server.faults.clear()
            cleared = time.monotonic()
            await until(pilot, lambda: _healthy(app, cleared))


async def test_resized_down_to_20x5_and_back(sim: SimThread, tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        app = _app(sim, store)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: _healthy(app))
            for size in ((20, 5), (160, 50), (2, 1), (80, 24)):
                await pilot.resize_terminal(*size)
                resized = time.monotonic()
                await until(pilot, lambda t=resized: _healthy(app, t))  # still sampling, probing
            await pilot.resize_terminal(20, 5)
            await pilot.press("p")
            assert app.session.live.probe_paused


async def test_insecure_is_announced_and_verification_failure_named(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    failed = r"TLS failed \(\[SSL: CERTIFICATE_VER.*--insecure skips verification"
    with (
        SimThread(replace(FAST, ssl_certfile=cert, ssl_keyfile=key)) as tls,
        Store(tmp_path / "db") as store,
    ):
        for insecure in (False, True):
            config = MonitorConfig(
                url=tls.url, interval=0.1, probe_every=0.2, probe_tokens=24, insecure=insecure
            )
            app = SpecmonApp(
                dashboard_session(config, Targets(Target(tls.url, insecure=insecure)), store)
            )
            async with app.run_test(size=(80, 24)) as pilot:
                if insecure:
                    await until(pilot, lambda app=app: _healthy(app))
                    assert _said(app, r"^TLS verification is off \(--insecure\)$")
                else:
                    await until(pilot, lambda app=app: _said(app, failed))


async def test_keys_answer_while_a_save_waits_for_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the store's write lock while the dashboard saves a baseline."""
    monkeypatch.setattr(app_module, "INFO_EVERY_S", 0.2)
    db = tmp_path / "db"
    with SimThread(replace(FAST, speculative_algorithm=None)) as plain, Store(db) as store:
        app = _app(plain, store)
        other = sqlite3.connect(db, isolation_level=None)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: _healthy(app))
            other.execute("BEGIN IMMEDIATE")  # the other process's write lock
            await pilot.press("b")  # this server runs without speculation: it is the baseline
            feed = app.session.feed
            assert isinstance(feed, LocalFeed)
            await until(pilot, lambda: feed.saving)
            await pilot.press("p")  # handled while the save waits for the lock
            assert app.session.live.probe_paused and feed.saving
            other.execute("ROLLBACK")
            other.close()
            await until(pilot, lambda: app.session.live.baseline.snapshot is not None)
        assert [s.id for s in store.list()] == [app.session.live.baseline.snapshot.id]  # type: ignore[union-attr]
