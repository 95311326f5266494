"""`specmon --prometheus` against a real Prometheus: two exporters over four simulated servers
(each exporter a winning and a losing one, each with its plain twin as baseline server), a real
Prometheus scraping both; the rows read through Prometheus show the same speedup, baseline and
verdict for each server as the exporters' own /metrics and as the direct fleet's row of that
server's View, and the fleet app (Pilot) shows them, the highlighted row's history (a range
query) under the table; Enter gives the server's URL.

Skips without /usr/bin/prometheus, fails instead with SPECMON_PROMETHEUS_REQUIRED=1 (the
fixture of test_prometheus_real.py). No wall-time sleeps are asserted on: every wait is bounded
polling on a condition.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from specmon.analysis.comparison import Speedup, verdict
from specmon.analysis.validity import ValidityState
from specmon.config import FleetTarget
from specmon.exporter.server import Exporter
from specmon.session.fleet import Fleet
from specmon.session.fleet_row import FleetRow, fleet_row, server_label
from specmon.session.prometheus_rows import BASELINE_MARK, FAMILIES, LABELLED, prometheus_rows
from specmon.session.server_session import ServerSession
from specmon.sim import SimThread
from specmon.sources.prometheus_api import PrometheusApi
from specmon.storage.store import Store
from specmon.target import Target
from tests.exporter.test_prometheus_real import (
    CONFIG,
    LIMIT_S,
    LOSING,
    PLAIN,
    WINNING,
    _free_port,
    _until_ready,
    prometheus_binary,  # noqa: F401  (the fixture)
)

# Probes far apart: a probe changes the figures, and the test compares three readings of them.
WATCHING = replace(CONFIG, probe_every=4.0)
Figures = tuple[float | None, str | None, str | None]
"""A server's speedup, baseline state and verdict."""


def _config(tmp_path: Path, exporters: list[str]) -> Path:
    path = tmp_path / "prometheus.yml"
    path.write_text(
        json.dumps(
            {
                "global": {"scrape_interval": "500ms"},
                "scrape_configs": [
                    {"job_name": "specmon", "static_configs": [{"targets": exporters}]}
                ],
            }
        )
    )
    return path


async def _exported(client: httpx.AsyncClient, urls: list[str]) -> dict[str, Figures]:
    """Each target's figures as its exporter's /metrics serves them now."""
    values: dict[str, dict[str, float]] = {}
    states: dict[str, str] = {}
    for url in urls:
        text = (await client.get(f"{url}/metrics")).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                target = sample.labels.get("target", "")
                if sample.name == "specmon_baseline_state" and sample.value == 1:
                    states[target] = sample.labels["state"]
                elif sample.name.startswith("specmon_speedup_ratio"):
                    values.setdefault(target, {})[sample.name] = sample.value
    figures: dict[str, Figures] = {}
    for target, v in values.items():
        gain = Speedup(
            v["specmon_speedup_ratio"],
            v.get("specmon_speedup_ratio_low"),
            v.get("specmon_speedup_ratio_high"),
        )
        figures[target] = (gain.value, states.get(target), verdict(gain))
    return figures


def _row_figures(row: FleetRow) -> Figures:
    return row.speedup, row.baseline, row.verdict


def _as_row(figures: Figures) -> Figures:
    value, state, judged = figures
    return value, BASELINE_MARK[ValidityState(state)] if state else "none", judged


async def _same_everywhere(
    client: httpx.AsyncClient, api: PrometheusApi, exporters: list[str], fleet: list[Fleet]
) -> list[FleetRow]:
    """Poll (bounded) until the rows through Prometheus, the exporters' /metrics and the direct
    rows agree for every server, the exporters' unchanged around the reading."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT_S
    sessions = [s for f in fleet for s in f.sessions]
    last: Any = None
    while True:
        before = await _exported(client, exporters)
        rows = {r.url: r for r in prometheus_rows(await api.instant(FAMILIES, LABELLED))}
        direct = {s.url: fleet_row(server_label(s.target), s.view()) for s in sessions}
        after = await _exported(client, exporters)
        want = {t: _as_row(f) for t, f in after.items()}
        through = {t: _row_figures(r) for t, r in rows.items()}
        straight = {t: _row_figures(r) for t, r in direct.items()}
        last = (want, through, straight)
        if len(want) == 4 and before == after and want == through == straight:
            return list(rows.values())
        assert loop.time() < deadline, f"never the same through Prometheus: {last}"
        await asyncio.sleep(0.25)


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_prometheus_rows_are_the_exporters_and_the_dashboards(
    prometheus_binary: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    sims = [
        SimThread(WINNING),
        SimThread(LOSING),
        SimThread(replace(WINNING, seed=5)),
        SimThread(replace(LOSING, seed=7)),
        SimThread(PLAIN),
        SimThread(replace(PLAIN, seed=11)),
    ]
    for sim in sims:
        sim.__enter__()
    store = Store(tmp_path / "exporter.db")
    fleets = []
    exporters = []
    tasks = []
    try:
        for pair, plain in ((sims[0:2], sims[4]), (sims[2:4], sims[5])):
            sessions = [
                ServerSession.of_target(
                    FleetTarget(sim.url, plain.url),
                    Target(sim.url),
                    WATCHING,
                    store,
                    take_baselines=True,
                )
                for sim in pair
            ]
            fleet = Fleet(sessions)
            exporter = Exporter(fleet, "127.0.0.1", 0)
            await exporter.start()
            fleets.append(fleet)
            exporters.append(exporter)
            tasks.append(asyncio.create_task(fleet.run()))
        port = _free_port()
        log = (tmp_path / "prometheus.log").open("w")
        server = await asyncio.create_subprocess_exec(
            prometheus_binary,
            f"--config.file={_config(tmp_path, [e.url[7:] for e in exporters])}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        prometheus = f"http://127.0.0.1:{port}"
        try:
            async with (
                httpx.AsyncClient(base_url=prometheus, timeout=10) as client,
                httpx.AsyncClient(timeout=10) as plain_client,
            ):
                await _until_ready(client, server)
                api = PrometheusApi(client)
                rows = await _same_everywhere(plain_client, api, [e.url for e in exporters], fleets)
                assert sorted(r.verdict or "" for r in rows) == [
                    "losing",
                    "losing",
                    "winning",
                    "winning",
                ]
                await _pilot(prometheus, {s.url for s in sims[:4]})
        finally:
            server.terminate()
            await asyncio.wait_for(server.wait(), 30)
            log.close()
    finally:
        for task in tasks:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        for exporter in exporters:
            await exporter.stop()
        store.close()
        for sim in sims:
            sim.__exit__(None, None, None)


async def _pilot(prometheus: str, targets: set[str]) -> None:
    """The fleet app: the four rows in the table (the direct fleet's cells of them), the worst
    first; Enter ends it with the highlighted server's URL, to open its dashboard."""

    from specmon.ui.prometheus_fleet_app import PrometheusFleetApp
    from specmon.ui.screens.fleet import FleetScreen, _cells

    app = PrometheusFleetApp(prometheus, 0.5)
    async with app.run_test(size=(160, 40)) as pilot:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LIMIT_S
        while True:
            screen = app.screen
            shown = isinstance(screen, FleetScreen) and {r.url for r in screen.rows} == targets
            if shown and len(screen.cells) == 4:
                break
            assert loop.time() < deadline, ("the table never showed the four", app.error)
            await pilot.pause(0.1)
        assert isinstance(screen, FleetScreen)
        assert screen.cells == [_cells(r) for r in screen.rows]
        assert screen.rows[0].verdict == "losing"
        highlighted = screen.highlighted()
        # Its history under the table, from Prometheus's range query: the speedup's line.
        while True:
            detail = screen.detail
            if "\nspeedup " in detail and "15 min: " in detail:
                break
            assert loop.time() < deadline, ("no history line under the table", detail)
            await pilot.pause(0.1)
        await pilot.press("enter")
    assert app.return_value == highlighted and highlighted in targets
