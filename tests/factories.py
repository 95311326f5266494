"""Shared test data: server info from the real captures, and sampler ticks built from it.

One builder each, keyword defaults, so a test names only what it is about: what the sampler hands
a session, and a run's figures (`runs.py` makes runs to measure, `snapshots.py` snapshots).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from specmon.model import (
    Protocol,
    Reading,
    RunFigures,
    Sample,
    ServerInfo,
    ServerMetrics,
    Snapshot,
    SourceName,
    Telemetry,
)
from specmon.sources.backends.sglang import parse_server_info
from specmon.sources.metrics import metrics_from_text

SGLANG = Path(__file__).parent / "fixtures" / "sglang-0.5.17"
"""A real SGLang 0.5.17's captures: `spec/` speculative, `plain/` speculation off."""

WALL0 = 1000.0
"""A sample's wall clock at monotonic time 0, unless the test says otherwise."""


def server_info(kind: str = "spec", **changes: Any) -> ServerInfo:
    """A real SGLang 0.5.17 server info (`kind`: "spec" or "plain"), its args changed as asked."""
    body = json.loads((SGLANG / kind / "server_info").read_text())
    body.update(changes)
    return parse_server_info(body)


def server_metrics(name: str = "spec/metrics_after") -> ServerMetrics:
    """A real SGLang 0.5.17 /metrics scrape (a file under tests/fixtures/sglang-0.5.17)."""
    return metrics_from_text((SGLANG / name).read_text())


def reading(value: object, t: float, seq: int = 1, error: str | None = None) -> Reading:
    """A source's reading at tick `t`: read at `t` when it has a value, failed at `t` on `error`."""
    return Reading(value, t if value is not None else None, seq, error, t if error else None)


_ABSENT: Any = object()


def sample(
    t: float,
    *,
    info: ServerInfo | Reading | None = _ABSENT,
    metrics: ServerMetrics | Reading | None = _ABSENT,
    telemetry: Telemetry | Reading | None = _ABSENT,
    seq: int = 1,
    error: str | None = None,
    wall: float | None = None,
) -> Sample:
    """A sampler tick at monotonic `t` (wall `WALL0 + t` unless given) with the sources named:
    each a value (read at `t`, `seq`, failing with `error` if given: see `reading`) or a
    `Reading` as it is; a source not named is not in the tick."""
    readings: dict[str, Reading] = {}
    for name, value in (
        (SourceName.INFO, info),
        (SourceName.METRICS, metrics),
        (SourceName.GPU, telemetry),
    ):
        if value is not _ABSENT:
            readings[name] = value if isinstance(value, Reading) else reading(value, t, seq, error)
    return Sample(t, WALL0 + t if wall is None else wall, MappingProxyType(readings))


def a_run(**changes: Any) -> RunFigures:
    """One probe run's figures: 128 tokens (62 prompt), TTFT 20 ms, 0.5 s end to end, 280 tok/s
    decode; the speculation figures (accept length, steps, cycle) unknown unless given."""
    plain = RunFigures(
        completion_tokens=128,
        prompt_tokens=62,
        ttft_ms=20.0,
        e2e_s=0.5,
        e2e_tok_s=256,
        decode_tok_s=280.0,
        accept_length=None,
        server_accept_length=None,
        verify_ct=None,
        cycle_ms=None,
        cycle_ms_p50=None,
        cycle_ms_p95=None,
    )
    return replace(plain, **changes)


PROTOCOL = Protocol(5, 0, 256, 0.0, "p")
"""A bench protocol: 5 runs, no warm-up, 256 tokens, greedy."""


def a_snapshot(**changes: Any) -> Snapshot:
    """A stored bench (id None unless given) of one `a_run()` against the plain SGLang server at
    http://b:2, taken at wall 1000 under `PROTOCOL`; fields changed as asked."""
    plain = Snapshot(
        created_at=1000.0,
        url="http://b:2",
        label=None,
        server=server_info("plain"),
        protocol=PROTOCOL,
        runs=(a_run(),),
    )
    return replace(plain, **changes)
