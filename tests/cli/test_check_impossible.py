"""`check` withholds an accept length no verify step can give, as the dashboard does
(`analysis.acceptance.impossible_accept_length`): against the simulator in adaptive mode, which
drafts nothing at batch 2 and does not count those steps (as SGLang's adaptive mode), a probe
that ran half beside another request reads tokens over the counted steps only, past k + 1."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from specmon.analysis.validity import LifetimeCheck, LifetimeState
from specmon.check import run_check
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, Snapshot
from specmon.reports.check_report import report_to_dict
from specmon.sim import SimConfig, SimServer
from specmon.sources.backends import Connection
from specmon.target import Target

CONFIG = SimConfig(
    speculative_num_draft_tokens=4,  # k = 3: at most 4 tokens a verify step
    plain_step_ms=10.0,
    cycle_ms=20.0,  # slow enough that the other request outlasts the probe's start
    ttft_ms=2.0,
    prefill_ms_per_token=0.0,
    concurrency_slowdown=0.0,
    accept_length=3.5,
    adaptive_drafts=((1, 3), (2, 0)),  # beside another request: no drafting, steps uncounted
)
TRAFFIC_TOKENS, PROBE_AFTER = 400, 250
"""The other request's length, and how far it is when the probe starts: the probe's first ~150
tokens come one a step, uncounted; its last ~150 at 3.5 a counted step (~43): 300 / 43 ≈ 7."""


async def _traffic(url: str, ready: asyncio.Event) -> None:
    body = {
        "text": "Tell a long story.",
        "sampling_params": {"max_new_tokens": TRAFFIC_TOKENS, "ignore_eos": True},
        "stream": True,
    }
    async with (
        httpx.AsyncClient(base_url=url, timeout=30) as client,
        client.stream("POST", "/generate", json=body) as response,
    ):
        async for line in response.aiter_lines():
            if line.startswith("data: {"):
                done = json.loads(line[6:])["meta_info"]["completion_tokens"]
                if done >= PROBE_AFTER:
                    ready.set()


@pytest.mark.slow
async def test_an_accept_length_past_k_plus_one_is_withheld_by_check() -> None:
    server = SimServer(CONFIG)
    await server.start()
    probes = 0

    async def probe(protocol: Protocol) -> Snapshot:
        nonlocal probes
        probes += 1
        ready = asyncio.Event()
        traffic = asyncio.create_task(_traffic(server.url, ready)) if probes == 1 else None
        if traffic is not None:
            await asyncio.wait_for(ready.wait(), 30)
        snapshot = await take_snapshot(Target(server.url), protocol, kind=SnapshotKind.RUN)
        if traffic is not None:
            await traffic
        return snapshot

    async def same(_baseline: Snapshot) -> LifetimeCheck:
        return LifetimeCheck(LifetimeState.SAME, "the same server process")

    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10.0) as client:
            report = await run_check(
                Connection(client),
                server.url,
                run_probe=probe,
                check_lifetime=same,
                probe_tokens=300,
            )
    finally:
        await server.stop()
    texts = [f.text for f in report.findings]
    withheld = [t for t in texts if t.startswith("probe accept length withheld: ")]
    assert withheld and "cannot be: at most k + 1 = 4" in withheld[0], texts
    assert not any("saw no verify steps" in t for t in texts)
    assert report.probe is not None and report.probe.accept_length is None
    assert report.exit_code == 1  # degraded: a figure that cannot be is a finding
    probe_json = report_to_dict(report)["probe"]
    assert isinstance(probe_json, dict) and probe_json["accept_length"] is None
