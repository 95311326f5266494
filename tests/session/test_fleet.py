"""The fleet: one session per server, one row each from its View, the worst on top."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import replace
from pathlib import Path

import pytest
from factories import sample, server_info
from replay import replay_probe

from specmon.analysis.figures import run_figures
from specmon.config import FleetTarget, MonitorConfig, Targets
from specmon.model import Protocol, Sample, ServerInfo, Snapshot, WorkerStatus
from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.session.baselines import BaselineOrigin, lookup_baseline
from specmon.session.fleet import Fleet
from specmon.session.fleet_row import Rank, fleet_row, server_label, worst_first
from specmon.session.server_session import ServerSession, dashboard_session
from specmon.session.store_baseline import STORE_LOOKUP_EVERY_S
from specmon.session.view import View
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store
from specmon.target import Target

FAST = SimConfig(plain_step_ms=2.0, cycle_ms=4.0, accept_length=2.0, ttft_ms=5.0, seed=3)
CONFIG = MonitorConfig(
    url="http://unused", interval=0.2, probe_every=0.3, probe_tokens=32, connect_timeout=0.5
)
LIMIT_S = 60.0
NOW = 1_796_023_200.0
URL = "http://10.1.230.174:8000"


def _closed_port() -> str:
    """An address where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_a_down_server_sorts_on_top_with_its_reason() -> None:
    down_url = _closed_port()
    with SimThread(FAST) as live, SimThread(replace(FAST, speculative_algorithm=None)) as plain:
        sessions = [
            ServerSession.of_target(
                FleetTarget(live.url, name="live"), Target(live.url), CONFIG, None
            ),
            ServerSession.of_target(
                FleetTarget(plain.url, name="plain"), Target(plain.url), CONFIG, None
            ),
            ServerSession.of_target(
                FleetTarget(down_url, name="down"), Target(down_url), CONFIG, None
            ),
        ]

        async def run() -> None:
            task = asyncio.create_task(Fleet(sessions).run())
            loop = asyncio.get_running_loop()
            deadline = loop.time() + LIMIT_S
            while not (
                all(s.probes_ok for s in sessions[:2])
                and sessions[2].view().identity.state == "down"
            ):
                assert loop.time() < deadline, "the fleet did not settle"
                await asyncio.sleep(0.02)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(run())
    rows = worst_first(fleet_row(s.target.label, s.view()) for s in sessions)
    top = rows[0]
    assert top.label == "down"
    assert top.rank == Rank.DOWN and top.state == "down"
    assert "refused" in top.reason.lower() or "connect" in top.reason.lower()
    assert top.decode_tok_s is None and top.title is None  # missing is None, never 0
    by_label = {r.label: r for r in rows}
    spec, base = by_label["live"], by_label["plain"]
    # Figures are the View's own: the row says what the single-server view says.
    view = sessions[0].view()
    assert spec.decode_tok_s == view.decode.recent_tok_s == sessions[0].live.recent().decode_tok_s
    assert spec.accept_length == view.spec.accept_length and spec.accept_length is not None
    assert spec.title is not None and spec.title.startswith("SGLang")
    assert spec.speculation == view.identity.speculation_brief == "EAGLE3 2/1/3"
    assert spec.baseline == "none" and spec.rank == Rank.NO_COMPARISON
    # The table has no `b` (issue 25): the way to a baseline from there is its dashboard.
    assert spec.reason == "no baseline yet — Enter, then b"
    assert "press b" in dict(view.missing)["speedup"]  # the dashboard's own words
    # A plain server has no speedup to show, and sorts last: nothing of speculation to look at.
    assert base.speculation == "no spec" and base.speculative is False
    assert base.speedup is None and base.baseline == "—" and base.rank == Rank.NO_SPECULATION
    assert rows[-1] is base and base.reason == "speculation is off on this server"


@pytest.mark.parametrize(
    ("target", "label"),
    [
        (FleetTarget("http://10.1.230.174:8000"), "10.1.230.174:8000"),
        (FleetTarget("https://gpu.example.com/"), "https://gpu.example.com"),
        (FleetTarget("http://10.1.230.174:8000", name="box-3"), "box-3"),
    ],
)
def test_the_server_column_names_the_server(target: FleetTarget, label: str) -> None:
    """Without the scheme that says nothing (https:// is kept: it is not the default), or by the
    configured name."""
    assert server_label(target) == label


def test_rows_sort_by_rank_then_speedup() -> None:
    row = fleet_row("x", _view_of_nothing())
    assert row.rank == Rank.CONNECTING
    rows = [replace(row, label="b", rank=Rank.WINNING, speedup=0.3),
            replace(row, label="a", rank=Rank.WINNING, speedup=0.1),
            replace(row, label="c", rank=Rank.LOSING, speedup=-0.2),
            replace(row, label="d", rank=Rank.WINNING, speedup=None)]  # fmt: skip
    assert [r.label for r in worst_first(rows)] == ["c", "a", "b", "d"]


def test_a_router_s_row_names_the_workers_left_out_of_its_sums() -> None:
    view = _view_of_nothing()
    workers = (
        WorkerStatus("http://w1:30000"),
        WorkerStatus("http://w2:30000", "connection refused", down_since=0.0),
    )
    row = fleet_row("x", replace(view, server=replace(view.server, workers=workers)))
    assert row.reason.startswith("no answer yet; partial: 1 of 2 workers left out: worker w2:30000")


def _view_of_nothing() -> View:
    session = ServerSession.of_target(
        FleetTarget("http://127.0.0.1:9"), Target("http://127.0.0.1:9"), CONFIG, None
    )
    return session.view()


def test_a_baseline_saved_later_is_found_within_a_minute(tmp_path: Path) -> None:
    """The store is asked again while no baseline applies: `specmon bench` of the baseline
    server elsewhere is picked up (every STORE_LOOKUP_EVERY_S of sample time, not every tick)."""
    info = server_info("spec")
    with Store(tmp_path / "db") as store:
        config = replace(CONFIG, probe_tokens=256)
        session = ServerSession.of_target(
            FleetTarget(URL), Target(URL), config, store, wall=lambda: NOW
        )
        session.sample(_sample(1.0, info))
        assert session.live.baseline.snapshot is None
        runs = tuple(
            run_figures(asyncio.run(replay_probe(f"plain/generate_stream_{i}.json")))
            for i in range(3)
        )
        plain = server_info("plain")
        saved = store.save(
            Snapshot(
                NOW - 60,
                "http://10.1.230.174:8001",
                None,
                plain,
                Protocol(3, 1, 256, 0.0, DEFAULT_PROMPT),
                runs,
            )
        )
        session.sample(_sample(1.0 + STORE_LOOKUP_EVERY_S / 2, info))
        assert session.live.baseline.snapshot is None  # not asked again yet
        session.sample(_sample(1.0 + STORE_LOOKUP_EVERY_S, info))
        baseline = session.live.baseline.snapshot
        assert baseline is not None and baseline.id == saved
        assert session.live.baseline.origin == BaselineOrigin.STORE
        assert session.live.baseline.server_url == "http://10.1.230.174:8001"  # to follow


def test_the_dashboard_and_the_fleet_find_the_same_stored_baseline(tmp_path: Path) -> None:
    """Issue 26: on an H200 the dashboard found baseline #1 and the fleet "none", each deciding
    by its own code. Both run the one `ServerSession` now: the same server, store and sample
    give the same baseline, and the same Baseline panel."""
    info = server_info("spec")
    runs = tuple(
        run_figures(asyncio.run(replay_probe(f"plain/generate_stream_{i}.json"))) for i in range(3)
    )
    config = replace(CONFIG, url=URL, probe_tokens=256)
    with Store(tmp_path / "db") as store:
        protocol = Protocol(3, 1, 256, 0.0, DEFAULT_PROMPT)
        saved = store.save(Snapshot(NOW - 60, URL, None, server_info("plain"), protocol, runs))
        dashboard = dashboard_session(config, Targets(Target(URL)), store, wall=lambda: NOW)
        fleet = Fleet(
            [
                ServerSession.of_target(
                    FleetTarget(URL), Target(URL), config, store, wall=lambda: NOW
                )
            ]
        )
        for session in (dashboard, *fleet.sessions):
            session.sample(_sample(1.0, info))
            baseline = session.live.baseline.snapshot
            assert baseline is not None and baseline.id == saved
            assert session.live.baseline.origin == BaselineOrigin.STORE
        assert dashboard.view().baseline == fleet.sessions[0].view().baseline


def _sample(t: float, info: ServerInfo) -> Sample:
    return sample(t, info=info, metrics=None, seq=int(t), wall=NOW - 100 + t)


@pytest.mark.slow
def test_targets_sharing_a_baseline_server_take_one_baseline_not_two_at_once(
    tmp_path: Path,
) -> None:
    """Two speculative servers, one plain twin as both targets' baseline server: two benches at
    once would each measure the other's load. One is taken; the other target finds it in the
    store as soon as it is saved."""
    with (
        SimThread(FAST) as a,
        SimThread(FAST) as b,
        SimThread(replace(FAST, speculative_algorithm=None)) as plain,
        Store(tmp_path / "db") as store,
    ):
        config = replace(CONFIG, baseline_runs=2)
        sessions = [
            ServerSession.of_target(
                FleetTarget(sim.url, plain.url), Target(sim.url), config, store, take_baselines=True
            )
            for sim in (a, b)
        ]

        async def run() -> None:
            task = asyncio.create_task(Fleet(sessions).run())
            loop = asyncio.get_running_loop()
            deadline = loop.time() + LIMIT_S
            while not all(s.live.baseline.snapshot is not None for s in sessions):
                assert loop.time() < deadline, "no baseline for both"
                # Never two baseline benches at once.
                assert sum(s.live.bench is not None for s in sessions) <= 1
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(run())
        baselines = [s.live.baseline.snapshot for s in sessions]
        assert baselines[0] is not None and baselines[1] is not None
        assert baselines[0].id == baselines[1].id  # the one bench, found in the store
        assert {s.live.baseline.origin for s in sessions} == {
            BaselineOrigin.BASELINE_SERVER,
            BaselineOrigin.STORE,
        }
        assert len(store.list()) == 1
        assert all(not s.benching for s in sessions)


def test_no_baseline_applies_names_the_nearest_the_same_on_every_surface(tmp_path: Path) -> None:
    """Issue 24 §6: baseline #1 taken with 500 tokens, the probe uses 256. The fleet row, the
    dashboard's View (its panel and log) and the lookup `check` makes agree, from one lookup:
    #1 is named with what keeps it from applying; the table says how to get one from there."""
    info = server_info("spec")
    runs = tuple(
        run_figures(asyncio.run(replay_probe(f"plain/generate_stream_{i}.json"))) for i in range(3)
    )
    with Store(tmp_path / "db") as store:
        saved = store.save(
            Snapshot(
                NOW - 60,
                "http://10.1.230.174:8001",
                None,
                server_info("plain"),
                Protocol(3, 1, 500, 0.0, DEFAULT_PROMPT),
                runs,
            )
        )
        config = replace(CONFIG, probe_tokens=256)
        session = ServerSession.of_target(
            FleetTarget(URL), Target(URL), config, store, wall=lambda: NOW
        )
        session.sample(_sample(1.0, info))
        assert lookup_baseline(store, info, None).baseline is not None  # check adopts its protocol
    why = (
        f"no baseline applies: #{saved} (http://10.1.230.174:8001) was taken with max_tokens "
        "500, the probe uses 256"
    )
    view = session.view()
    assert session.live.baseline.snapshot is None
    assert view.baseline.why_none == why
    assert dict(view.missing)["speedup"] == f"{why} — press b"
    assert [e.text for e in view.events if e.text.startswith("no baseline")] == [f"{why} — press b"]
    assert fleet_row("x", view).reason == f"{why} — Enter, then b"
