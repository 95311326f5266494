"""`specmon exporter` watching a simulated TensorRT-LLM server and its plain twin: the same
figures as SGLang's (tests/exporter/test_exporter.py), read through the TensorRT-LLM backend."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from specmon.config import FleetTarget
from specmon.exporter.server import Exporter
from specmon.session.fleet import Fleet
from specmon.session.server_session import ServerSession
from specmon.sim import SimThread
from specmon.storage.store import Store
from specmon.target import Target
from tests.exporter.test_exporter import (
    A,
    _bench,
    _config,
    _families,
    _serving,
    _states,
    _until,
    _value,
)

TRTLLM = replace(A, backend="trtllm")


@pytest.mark.slow
def test_a_trtllm_server_exports_what_bench_measures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SimThread(TRTLLM) as spec, SimThread(replace(TRTLLM, speculative_algorithm=None)) as plain:
        store = Store(tmp_path / "exporter.db")
        session = ServerSession.of_target(
            FleetTarget(spec.url, plain.url),
            Target(spec.url),
            _config(),
            store,
            take_baselines=True,
        )
        fleet = Fleet([session])

        def speculative() -> bool:
            info = session.live.server.info
            return info is not None and info.speculative is not None

        async def scrape(client: httpx.AsyncClient) -> str:
            await _until(lambda: session.probes_ok >= 3, "three probes")
            await _until(lambda: session.live.baseline.snapshot is not None, "a baseline")
            # Its speculation shows once a request has finished, at the next server-info read.
            await _until(speculative, "its speculation shown")
            return (await client.get("/metrics")).text

        text = asyncio.run(_serving(fleet, Exporter(fleet, "127.0.0.1", 0), scrape))
        store.close()
        assert isinstance(text, str)
        families = _families(text)
        info = {s.labels["target"]: s.labels for s in families["specmon_target_info"].samples}
        assert info[spec.url]["backend"] == "trtllm"
        assert _states(families, spec.url) == {"valid": 1.0, "unverified": 0.0, "stale": 0.0}
        low, gain, high = (
            _value(families, f"specmon_speedup_ratio{end}", spec.url)
            for end in ("_low", "", "_high")
        )
        assert 0 < low <= gain <= high  # every draft accepted: speculation wins
        pooled = _bench(spec.url, tmp_path / "bench.db", capsys)["pooled"]
        assert isinstance(pooled, dict)
        exported_tok_s = _value(families, "specmon_probe_decode_tokens_per_second", spec.url)
        exported_accept = _value(families, "specmon_probe_accept_length", spec.url)
        assert exported_tok_s == pytest.approx(pooled["decode_tok_s"], rel=0.02)
        assert exported_accept == pytest.approx(pooled["accept_length"], rel=0.02)
