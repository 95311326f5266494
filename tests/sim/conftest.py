"""Fixtures for the simulator tests: servers on ephemeral ports, stopped after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from sim_helpers import StartSim

from specmon.sim import SimConfig, SimServer


@pytest.fixture
async def start_sim() -> AsyncIterator[StartSim]:
    """Start simulators on demand; all of them stop when the test ends."""
    servers: list[SimServer] = []

    async def start(config: SimConfig) -> SimServer:
        server = SimServer(config)
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()


@pytest.fixture
def client_for() -> Callable[..., httpx.AsyncClient]:
    """An httpx client for a simulator (use as `async with client_for(sim) as c`)."""

    def make(server: SimServer, **kwargs: object) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=server.url, timeout=10.0, **kwargs)  # type: ignore[arg-type]

    return make
