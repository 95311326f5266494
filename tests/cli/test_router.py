"""`check` and `bench` behind a router (`--metrics-url`), against simulated workers behind the
test router: a down worker is named (check degrades), workers of different models are refused,
the bench reads its counters from the workers and is refused when one restarted during it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from router import router_thread

from specmon.cli import main
from specmon.measure.bench import Progress
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol
from specmon.reports.check_report import EXIT_DEGRADED, EXIT_HEALTHY, EXIT_UNREACHABLE
from specmon.sim import SimConfig, SimThread
from specmon.sources.http import make_client
from specmon.sources.probe import run_probe
from specmon.target import Target

pytestmark = pytest.mark.slow  # servers on loopback

FAST = SimConfig(plain_step_ms=4.0, cycle_ms=8.0, accept_length=2.1, ttft_ms=10.0, seed=3)


@contextlib.contextmanager
def deployment(*configs: SimConfig) -> Iterator[tuple[list[SimThread], list[str]]]:
    """Workers of `configs` behind the router: the sims, and `URL --metrics-url W …`."""
    with contextlib.ExitStack() as stack:
        sims = [stack.enter_context(SimThread(c)) for c in configs]
        url = stack.enter_context(router_thread([s.url for s in sims]))
        argv = [url]
        for sim in sims:
            argv += ["--metrics-url", sim.url]
        yield sims, argv


def _check(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, Any]]:
    code = main(["check", *argv, "--json", "--probe-tokens", "40"])
    return code, json.loads(capsys.readouterr().out)


def test_check_reads_the_workers_and_names_one_down(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with deployment(FAST, FAST) as (sims, argv):
        healthy_code, healthy = _check(capsys, argv)
        sims[1].call(sims[1].server.stop)
        code, report = _check(capsys, argv)
    assert healthy_code == EXIT_HEALTHY, healthy["findings"]
    texts = [f["text"] for f in healthy["findings"]]
    assert any("summed over 2 of 2 workers" in t for t in texts), texts
    assert healthy["probe"]["accept_length"] > 1  # through the router
    assert code == EXIT_DEGRADED
    name = sims[1].url.removeprefix("http://")
    warned = [f["text"] for f in report["findings"] if f["level"] == "warn"]
    assert any(f"worker {name} down since" in t for t in warned), warned
    workers = report["server"]["workers"]
    assert [w["url"] for w in workers] == [s.url for s in sims]
    assert workers[0]["error"] is None and workers[1]["error"]


def test_check_refuses_workers_of_different_models(
    capsys: pytest.CaptureFixture[str],
) -> None:
    other = dataclasses.replace(FAST, model_path="other/model")
    with deployment(FAST, other) as (_sims, argv):
        code, report = _check(capsys, argv)
    assert code == EXIT_UNREACHABLE
    (failed,) = [f["text"] for f in report["findings"] if f["level"] == "fail"]
    assert "differ in model" in failed and "other/model" in failed


def test_bench_behind_the_router(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with deployment(FAST, FAST) as (sims, argv):
        args = ["bench", *argv, "--runs", "2", "--max-tokens", "40", "--db", str(tmp_path / "db")]
        code = main([*args, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    snapshot = json.loads(out.out)
    assert snapshot["target"]["backend"] == "sglang" and len(snapshot["runs"]) == 2
    assert all(run["accept_length"] > 1 for run in snapshot["runs"])
    assert f"Server info and /metrics from its workers: {sims[0].url}" in out.err


def test_a_bad_worker_address_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "a:1", "--metrics-url", "a:1", "--json"])
    assert code != 0
    assert "--metrics-url lists the monitored server itself" in capsys.readouterr().err


def test_a_bench_during_which_a_worker_restarted_is_refused_and_run_again() -> None:
    told: list[str] = []
    with deployment(FAST, FAST) as (sims, argv):
        target = Target(argv[0], metrics_urls=(sims[0].url, sims[1].url))
        restarts = [sims[1]]

        async def serve_one_request_each() -> None:  # more than a run's: a restart shows
            for sim in sims:
                async with make_client(Target(sim.url)) as client:
                    await run_probe(client, prompt="Count.", max_tokens=100)

        asyncio.run(serve_one_request_each())

        def progress(p: Progress) -> None:
            if p.phase == "run" and restarts:  # once, after the first run
                sim = restarts.pop()
                sim.call(sim.server.restart)

        snapshot = asyncio.run(
            take_snapshot(
                target,
                Protocol(3, 0, 30, 0.0, "Count."),
                kind=SnapshotKind.RUN,
                on_progress=progress,
                again=told.append,
            )
        )
    assert len(snapshot.runs) == 3
    assert told == [f"worker {sims[1].url} restarted during the bench; benching it again"]


def test_whatif_behind_the_router(empty_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    with deployment(FAST, FAST) as (_sims, argv):
        code = main(
            ["whatif", *argv, "--runs", "2", "--max-tokens", "40", "--db", empty_db, "--json"]
        )
    report = json.loads(capsys.readouterr().out)
    # Benched and saved through the router; a draft model's cycle needs a baseline to rank.
    assert report["snapshot_id"] is not None
    assert code == 1 and "no valid baseline to split the cycle" in report["reason"]
