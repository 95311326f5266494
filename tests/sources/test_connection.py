"""A connection's sources name the URL each request asked, even when `metrics` has to find the
server's kind first (it said `metrics: …/server_info: connection refused`, as if /metrics had)."""

from __future__ import annotations

import socket

import pytest

from specmon.errors import Unreachable
from specmon.sources.backends import Connection
from specmon.sources.http import make_client
from specmon.target import Target


async def test_metrics_before_the_server_kind_is_known_says_what_it_asked() -> None:
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        url = f"http://127.0.0.1:{bound.getsockname()[1]}"
        async with make_client(Target(url)) as client:
            connection = Connection(client)
            with pytest.raises(Unreachable) as metrics:
                await connection.metrics()
            with pytest.raises(Unreachable) as info:
                await connection.info()
    refused = f"{url}/server_info: connection refused (nothing listening?)"
    assert str(info.value) == refused
    assert str(metrics.value) == f"{refused} (asked first, to know how to read /metrics)"
