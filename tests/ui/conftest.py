"""Dashboard test fixtures: real 0.5.17 captures turned into the messages the workers send."""

from __future__ import annotations

import gc
import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import factories
import pytest
from factories import reading, server_info, server_metrics
from replay import FIXTURES, replay_probe

from specmon.analysis.figures import run_figures
from specmon.analysis.validity import lifetime_of
from specmon.config import MonitorConfig, Targets
from specmon.model import (
    Protocol,
    Sample,
    ServerInfo,
    ServerMetrics,
    Snapshot,
    Telemetry,
)
from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.session.server_session import dashboard_session
from specmon.sources.dcgm import telemetry_from_text
from specmon.storage.store import Store
from specmon.target import Target
from specmon.ui.app import SpecmonApp

NOW = 1_796_023_200.0  # a fixed wall clock: 2026-11-30 08:00:00 UTC
URL = "http://10.1.230.174:8000"
BASE_URL = "http://10.1.230.174:8001"


@pytest.fixture(autouse=True)
def _utc() -> Iterator[None]:
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


@pytest.fixture(autouse=True)
def _sockets_of_cancelled_connects() -> Iterator[None]:
    """Collect, quietly, the sockets asyncio and anyio leave to the garbage collector.

    A dashboard that quits while a worker connects cancels anyio's `connect_tcp` (4.16) just
    after the connection was made, and anyio leaves that socket unclosed; a TLS handshake the
    client refuses leaves the simulator's side of it unclosed (asyncio). Their ResourceWarning
    would otherwise fail whichever later test the collector happens to run in.
    """
    yield
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "unclosed", ResourceWarning)
        gc.collect()


def gpus() -> Telemetry:
    """Eight H200s as dcgm-exporter serves them (tests/fixtures/dcgm)."""
    text = (FIXTURES.parent / "dcgm" / "dcgm-exporter-8gpu.txt").read_text()
    return telemetry_from_text(text, "http://10.1.230.174:9400/metrics")


def sample(
    t: float,
    info: ServerInfo | None,
    metrics: ServerMetrics | None,
    *,
    seq: int = 1,
    info_error: str | None = None,
    metrics_error: str | None = None,
    telemetry: Telemetry | None = None,
) -> Sample:
    """A sampler tick, as the sampler would emit it (a source never read yet: sequence 0)."""
    gpu: dict[str, Any] = {} if telemetry is None else {"telemetry": telemetry}
    return factories.sample(
        t,
        info=reading(info, t, seq if info else 0, info_error),
        metrics=reading(metrics, t, seq if metrics else 0, metrics_error),
        seq=seq,
        wall=NOW - 10 + t,
        **gpu,
    )


async def baseline_snapshot(created_at: float, **arg_changes: Any) -> Snapshot:
    """A baseline from the real plain streams (speculation off), saved-looking (id 1)."""
    runs = tuple(
        [run_figures(await replay_probe(f"plain/generate_stream_{i}.json")) for i in range(3)]
    )
    info = server_info("plain", **arg_changes)
    lifetime = lifetime_of(info, server_metrics("plain/metrics"))
    return Snapshot(
        created_at,
        BASE_URL,
        None,
        info,
        Protocol(3, 1, 256, 0.0, DEFAULT_PROMPT),
        runs,
        id=1,
        lifetime=lifetime,
    )


@pytest.fixture
def make_app(tmp_path: Path) -> Iterator[Callable[..., SpecmonApp]]:
    """Build dashboards with no workers and a fixed clock: tests hand the session its inputs."""
    stores: list[Store] = []

    def build(
        baseline_url: str | None = BASE_URL, *, read_only: bool = False, **session_options: Any
    ) -> SpecmonApp:
        """The dashboard of `dashboard_session(config, targets, store, **session_options)`."""
        config = MonitorConfig(url=URL, baseline_url=baseline_url, probe_tokens=256)
        targets = Targets(Target(URL), Target(baseline_url) if baseline_url else None)
        stores.append(Store(tmp_path / f"ui{len(stores)}.db"))
        session = dashboard_session(
            config, targets, stores[-1], wall=lambda: NOW, **session_options
        )
        return SpecmonApp(session, read_only=read_only, start_workers=False)

    yield build
    for store in stores:
        store.close()
