"""Each real server is recognised for what it is, with the identity and configuration it exposes."""

from __future__ import annotations

import httpx
import pytest
from real_helpers import RealServer

from specmon.sources.backends import connect

pytestmark = pytest.mark.realserver


async def test_detects_the_backend(real_server: RealServer) -> None:
    async with httpx.AsyncClient(base_url=real_server.url, timeout=30) as client:
        backend, info = await connect(client)
        metrics = await backend.metrics(client)
    assert backend.name == info.backend == real_server.backend
    assert info.model == "tiny-llama"
    assert info.metrics_enabled is True
    assert info.speculative is not None and info.speculative.num_steps in (None, 4)
    assert metrics.spec_drafts_total is not None
    assert metrics.generation_tokens_total is not None
