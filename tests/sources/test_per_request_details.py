"""Exact per-request acceptance: the server's own histogram for a probe, in SGLang's and vLLM's
shapes, against the simulator's truth for that request and a real vLLM 0.32.0 capture; without
them, the counters' path (the probe alone) and what the `i` screen says of it."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from specmon.analysis.acceptance import from_histogram
from specmon.analysis.figures import run_figures
from specmon.model import AcceptSource, PositionSource, ProbeResult
from specmon.sim import SimConfig, SimThread
from specmon.sim.record import EmittedRequest
from specmon.sources import probe
from specmon.sources.backends import openai_compat, vllm
from specmon.sources.http import make_client
from specmon.sources.metrics import parse_scrape
from specmon.target import Target

REAL = Path(__file__).parents[1] / "fixtures" / "vllm-0.32.0-cpu"
VLLM = SimConfig(
    backend="vllm",
    speculative_num_steps=4,
    speculative_num_draft_tokens=5,
    accept_length=2.4,
    plain_step_ms=2.0,
    cycle_ms=3.0,
    ttft_ms=2.0,
    seed=3,
)
SGLANG = replace(VLLM, backend="sglang")
SGLANG_DETAILS = {
    "spec_accept_rate", "spec_accept_length", "spec_cap_length", "spec_block_accept_length",
    "spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_verify_ct",
    "spec_correct_drafts_histogram", "spec_cap_lens_histogram",
}  # fmt: skip
"""`SpecTokensDetails` (sglang/srt/entrypoints/openai/protocol.py, PR #33518), as
`spec_tokens_details_from_meta_info` (…/openai/utils.py) fills it."""
LENGTHS = (90, 60)
"""Two probes at once, of two lengths (the simulator's records tell them apart by it)."""


def _truth(record: EmittedRequest, k: int) -> tuple[int, ...]:
    """The simulator's own histogram of the request: its verify steps by drafts accepted."""
    counts = Counter(record.step_accepted)
    return tuple(counts.get(j, 0) for j in range(k + 1))


async def _two_at_once(config: SimConfig) -> tuple[list[ProbeResult], list[EmittedRequest]]:
    """Two probes sharing the server: neither ran alone."""
    run = vllm.run_probe if config.backend == "vllm" else probe.run_probe
    with SimThread(config) as sim:
        async with make_client(Target(sim.url)) as client:
            results = await asyncio.gather(*(run(client, max_tokens=n) for n in LENGTHS))
        by_length = {r.max_new_tokens: r for r in sim.server.emitted}
    return list(results), [by_length[n] for n in LENGTHS]


@pytest.mark.parametrize("level", ["summary", "detailed"])
async def test_vllm_probe_histogram_is_the_servers_for_that_request(level: str) -> None:
    config = replace(VLLM, per_request_spec_decode_metrics=level)
    results, records = await _two_at_once(config)
    for result, record in zip(results, records, strict=True):
        truth = _truth(record, 4)
        assert result.accepted_histogram == truth
        figures = run_figures(result)
        assert figures.position_source == PositionSource.DRAFTING_HISTOGRAM
        assert figures.server_accept_source == AcceptSource.DETAILS
        accepted = sum(j * n for j, n in enumerate(truth))
        assert figures.server_accept_length == pytest.approx(1 + accepted / sum(truth))
        expected = from_histogram(truth)
        assert expected is not None and figures.position_accept == expected.rates
        assert figures.position_steps == sum(truth) == record.verify_ct


async def test_sglang_probe_histogram_is_the_servers_for_that_request() -> None:
    results, records = await _two_at_once(SGLANG)
    for result, record in zip(results, records, strict=True):
        assert result.accepted_histogram == _truth(record, 4)
        figures = run_figures(result)
        assert figures.position_source == PositionSource.HISTOGRAM
        assert figures.server_accept_source == AcceptSource.DETAILS
        assert figures.server_accept_length == pytest.approx(record.accept_length)


async def test_sglang_spec_tokens_details_carry_the_same_histogram() -> None:
    """SGLang's OpenAI routes copy the native `meta_info` fields into `sglext` when asked."""
    body = {"prompt": "hello", "max_tokens": 80, "stream": True, "return_spec_tokens_details": True}
    with SimThread(SGLANG) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            answer = await client.post("/v1/completions", json=body)
        record = sim.server.emitted[-1]
    chunks = [json.loads(line[6:]) for line in answer.text.splitlines() if line[6:7] == "{"]
    details = next(c["sglext"]["spec_tokens_details"] for c in chunks if "sglext" in c)
    assert set(details) == SGLANG_DETAILS
    assert details["spec_correct_drafts_histogram"] == list(_truth(record, 4))
    assert details["spec_verify_ct"] == record.verify_ct
    assert details["spec_num_correct_drafts"] == record.correct_drafts


@pytest.mark.slow
async def test_without_details_vllm_takes_the_counters_path() -> None:
    """Today's path: the counters serve when the probe ran alone, and only then."""
    with SimThread(VLLM) as sim:
        async with make_client(Target(sim.url)) as client:
            alone = run_figures(await vllm.run_probe(client, max_tokens=90))
    assert alone.position_source == PositionSource.COUNTERS
    assert alone.server_accept_source == AcceptSource.COUNTERS
    results, _ = await _two_at_once(VLLM)
    for result in results:
        figures = run_figures(result)
        assert result.accepted_histogram is None
        assert figures.server_accept_length is None and figures.server_accept_source is None
        assert figures.position_source in (PositionSource.CHUNKS, None)


def _real_chunks() -> list[str]:
    text = (REAL / "probe_stream_per_request_detailed.txt").read_text()
    return [line[6:] for line in text.splitlines() if line.startswith("data: {")]


def test_real_vllm_details_equal_its_counters_over_the_probe() -> None:
    """vLLM 0.32.0 (CPU, n-gram, k = 4) with `--per-request-spec-decode-metrics detailed`: the
    request's histogram gives the per-position counters' deltas over it, exactly."""
    update = vllm.parse_chunk(_real_chunks()[-1])
    assert update.histogram == (11, 5, 5, 3, 9)
    assert update.accept_length == pytest.approx(1 + 60 / 33)
    before, after = (
        parse_scrape((REAL / f"per_request_counters_{name}").read_text(), ("vllm:",))
        for name in ("before", "after")
    )
    name = "spec_decode_num_accepted_tokens_per_pos_total"
    counted = [
        a.value - b.value for b, a in zip(before.by_name[name], after.by_name[name], strict=True)
    ]
    drafts = after.total("spec_decode_num_drafts_total") - (
        before.total("spec_decode_num_drafts_total") or 0
    )
    found = from_histogram(update.histogram)
    assert found is not None and found.steps == drafts == 33
    assert found.rates == tuple(n / drafts for n in counted)


@pytest.mark.parametrize("level", ["summary", "detailed"])
async def test_simulated_vllm_details_have_the_real_fields(level: str) -> None:
    """Field for field: the simulator's `metrics.speculative_decoding` against the real one
    (`summary` leaves out the per-step arrays, vllm/v1/metrics/stats.py `to_dict`)."""
    real = json.loads(_real_chunks()[-1])
    body = {**openai_compat.completions_payload("hi", 40)}
    config = replace(VLLM, per_request_spec_decode_metrics=level)
    with SimThread(config) as sim:
        async with httpx.AsyncClient(base_url=sim.url) as client:
            answer = await client.post(openai_compat.COMPLETIONS, json=body)
    sim_chunk = json.loads(answer.text.split("data: ")[-2])
    assert sorted(sim_chunk) == sorted(real)
    fields = set(real["metrics"]["speculative_decoding"])
    if level == "summary":
        fields -= {"per_step_accepted", "per_step_drafted"}
    details = sim_chunk["metrics"]["speculative_decoding"]
    assert set(details) == fields
    for key, value in details.items():
        assert type(value) is type(real["metrics"]["speculative_decoding"][key]), key
