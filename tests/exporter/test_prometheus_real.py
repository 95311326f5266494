"""docs/prometheus/ against a real Prometheus: Debian's `prometheus` (2.42, installed by
`.ci/run`) scrapes `specmon exporter` watching two simulated servers — one winning with
speculation, one losing — each with its plain twin as baseline server. The alert rules load
and evaluate without error, `SpeculationLosing` goes pending for the losing server alone, and
every query of the Grafana dashboard parses and returns series. Its `promtool test rules` runs
docs/prometheus/alerts_test.yml: the rules over series written out (they fire on the speedup's
interval, not its point, and stop when the exporter withdraws the figures).

Without /usr/bin/prometheus the test skips, saying why; with SPECMON_PROMETHEUS_REQUIRED=1 (CI
sets it) it fails instead. Grafana itself is not here (not packaged for Debian, not on PyPI):
its dashboard's queries are run by Prometheus, the JSON's structure by test_exporter_docs.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from specmon.config import FleetTarget, MonitorConfig
from specmon.exporter.server import Exporter
from specmon.session.fleet import Fleet
from specmon.session.server_session import ServerSession
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store
from specmon.target import Target

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "prometheus"
# A plain step of 10 ms; with speculation a 20 ms cycle, accepting well (a win) or little (a loss).
PLAIN = SimConfig(plain_step_ms=10.0, ttft_ms=10.0, speculative_algorithm=None, seed=3)
WINNING = replace(PLAIN, speculative_algorithm="EAGLE3", cycle_ms=20.0, accept_length=3.0)
LOSING = replace(WINNING, accept_length=1.2)
CONFIG = MonitorConfig(
    url="http://unused", interval=0.5, probe_every=1.0, probe_tokens=64, baseline_runs=2
)
LIMIT_S = 90.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _prometheus_config(tmp_path: Path, exporter: str) -> Path:
    path = tmp_path / "prometheus.yml"
    path.write_text(
        json.dumps(  # YAML is a superset of JSON
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(DOCS / "alerts.yml")],
                "scrape_configs": [
                    {"job_name": "specmon", "static_configs": [{"targets": [exporter]}]}
                ],
            }
        )
    )
    return path


async def _api(client: httpx.AsyncClient, path: str, **params: str) -> Any:
    response = await client.get(f"/api/v1/{path}", params=params)
    body = response.json()
    assert body["status"] == "success", (path, params, body)
    return body["data"]


async def _until_ready(client: httpx.AsyncClient, server: asyncio.subprocess.Process) -> None:
    """Wait for Prometheus to answer /-/ready (it starts its TSDB first), bounded."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT_S
    while True:
        assert server.returncode is None, "prometheus exited (its log is in tmp_path)"
        try:
            if (await client.get("/-/ready")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert loop.time() < deadline, "prometheus was not ready in time"
        await asyncio.sleep(0.2)


async def _until_result(client: httpx.AsyncClient, query: str, count: int) -> list[Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT_S
    while True:
        result: list[Any] = (await _api(client, "query", query=query))["result"]
        if len(result) >= count:
            return result
        assert loop.time() < deadline, f"timed out waiting for {count} series of {query}"
        await asyncio.sleep(0.5)


def _grafana_queries() -> list[tuple[str, str]]:
    """Every panel query of the dashboard, with its `$target` variable set to All."""
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    return [
        (panel["title"], target["expr"].replace("$target", ".*"))
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]


def _installed(path: str) -> str:
    if not Path(path).exists():
        reason = f"{path} is missing: apt-get install prometheus"
        if os.environ.get("SPECMON_PROMETHEUS_REQUIRED") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


@pytest.fixture
def prometheus_binary() -> str:
    return _installed(PROMETHEUS)


@pytest.fixture
def promtool() -> str:
    return _installed(PROMTOOL)


def test_the_alert_rules_fire_on_the_interval_and_stop_with_the_figures(promtool: str) -> None:
    """docs/prometheus/alerts_test.yml: SpeculationLosing fires on the interval's high end, not
    on the point estimate, and ends when the exporter withdraws the figures; the baseline's
    states raise their own alerts."""
    done = subprocess.run(
        [promtool, "test", "rules", str(DOCS / "alerts_test.yml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_prometheus_loads_the_rules_and_runs_the_dashboards_queries(
    prometheus_binary: str, tmp_path: Path
) -> None:
    with (
        SimThread(WINNING) as winning,
        SimThread(LOSING) as losing,
        SimThread(PLAIN) as plain,
        Store(tmp_path / "exporter.db") as store,
    ):
        sessions = [
            ServerSession.of_target(
                FleetTarget(sim.url, plain.url, name),
                Target(sim.url),
                CONFIG,
                store,
                take_baselines=True,
            )
            for sim, name in ((winning, "winning"), (losing, "losing"))
        ]
        fleet = Fleet(sessions)
        exporter = Exporter(fleet, "127.0.0.1", 0)
        await exporter.start()
        task = asyncio.create_task(fleet.run())
        port = _free_port()
        log = (tmp_path / "prometheus.log").open("w")
        server = await asyncio.create_subprocess_exec(
            prometheus_binary,
            f"--config.file={_prometheus_config(tmp_path, exporter.url[7:])}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as api:
                await _until_ready(api, server)
                await _check(api, winning.url, losing.url)
        finally:
            server.terminate()
            await asyncio.wait_for(server.wait(), 30)
            log.close()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await exporter.stop()


async def _check(api: httpx.AsyncClient, winning: str, losing: str) -> None:
    # Both speedups and their intervals, each against a baseline that applies, as Prometheus
    # stored them.
    valid = await _until_result(api, 'specmon_baseline_state{state="valid"} == 1', 2)
    assert {s["metric"]["target"] for s in valid} == {winning, losing}
    speedups = {
        s["metric"]["target"]: float(s["value"][1])
        for s in await _until_result(api, "specmon_speedup_ratio", 2)
    }
    assert speedups[winning] > 0.2 and speedups[losing] < -0.2
    highs = {
        s["metric"]["target"]: float(s["value"][1])
        for s in await _until_result(api, "specmon_speedup_ratio_high", 2)
    }
    assert highs[winning] > speedups[winning] and speedups[losing] < highs[losing] < 0

    # The alert rules: all six loaded and evaluated without error; the losing server's speedup
    # interval below zero makes SpeculationLosing pending (firing after 10 min), and no other
    # rule holds. (A baseline found in the store is unverified until its server is read: at
    # the start, for a scrape or two, SpecmonBaselineUnverified may be pending.)
    (group,) = (await _api(api, "rules"))["groups"]
    assert len(group["rules"]) == 6
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIMIT_S
    while True:
        rules = {r["name"]: r for r in (await _api(api, "rules"))["groups"][0]["rules"]}
        pending = [a for a in rules["SpeculationLosing"]["alerts"] if a["state"] == "pending"]
        others = {n: r["alerts"] for n, r in rules.items() if n != "SpeculationLosing"}
        evaluated = all(r["lastEvaluation"][:4] != "0001" for r in rules.values())
        if pending and evaluated and not any(others.values()):
            break
        assert loop.time() < deadline, ("SpeculationLosing alone never went pending", rules)
        await asyncio.sleep(0.5)
    assert all(r["health"] == "ok" for r in rules.values()), {
        n: r.get("lastError") for n, r in rules.items()
    }
    assert [a["labels"]["target"] for a in pending] == [losing]

    # The dashboard: every query parses, and each returns a series per target (the cycle's
    # quantiles need two scrapes of the histogram within their 5-minute rate window).
    for title, query in _grafana_queries():
        result = await _until_result(api, query, 2)
        assert {s["metric"].get("target") for s in result} == {winning, losing}, (title, query)
