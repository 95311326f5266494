"""The simulator's adaptive mode: draft length by running batch size, including 0 (no drafting),
as SGLang's batch-size buckets and vLLM's Dynamic SD ranges show it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
from sim_helpers import StartSim, fast, generate_body, sample_value, stream_chunks

from specmon.measure.snapshot import NotABaseline, SnapshotKind, take_snapshot
from specmon.model import Protocol
from specmon.sim.__main__ import config_from_args
from specmon.sim.decode import DecodeModel
from specmon.sources.backends import vllm
from specmon.target import Target

Client = Callable[..., httpx.AsyncClient]
VLLM_BODY = {
    "prompt": "one two three",
    "max_tokens": 40,
    "temperature": 0,
    "ignore_eos": True,
    "stream": True,
    "stream_options": {"include_usage": True, "continuous_usage_stats": True},
}


def test_the_last_bucket_at_or_below_the_batch_size_applies() -> None:
    config = fast(speculative_num_draft_tokens=4, adaptive_drafts=((1, 3), (4, 1), (8, 0)))
    assert [config.drafts_at(n) for n in (1, 3, 4, 7, 8, 64)] == [3, 3, 1, 1, 0, 0]
    # Without adaptive mode, and below the first bucket, the configured draft length.
    assert fast(speculative_num_draft_tokens=4).drafts_at(64) == 3
    assert fast(speculative_num_draft_tokens=4, adaptive_drafts=((4, 1),)).drafts_at(2) == 3


def test_a_step_drafting_less_is_shorter() -> None:
    model = DecodeModel.from_config(fast(speculative_num_draft_tokens=5, cycle_ms=3.0))
    assert model.step_ms(1) == model.step_ms(1, 4) == 3.0
    assert model.step_ms(1, 0) == 1.0  # a plain step
    assert model.step_ms(1, 2) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--adaptive-drafts", "1:x"], "expected batch-size:draft-length pairs"),
        (["--adaptive-drafts", "1:5"], "each draft length must be 0..2"),
        (["--adaptive-drafts", "4:1,2:0"], "strictly ascending"),
        (["--adaptive-drafts", "1:1", "--backend", "llamacpp"], "llama.cpp has no"),
        (["--adaptive-drafts", "1:1", "--speculative-algorithm", "none"], "speculation on"),
    ],
)
def test_bad_adaptive_flags_get_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        config_from_args(argv)
    assert message in capsys.readouterr().err.splitlines()[-1]


def test_the_flag_reaches_the_config() -> None:
    config = config_from_args(["--adaptive-drafts", "1:2,8:0"])
    assert config.adaptive_drafts == ((1, 2), (8, 0))


async def test_vllm_steps_without_drafts_leave_no_trace(
    start_sim: StartSim, client_for: Client
) -> None:
    """Dynamic SD with K = 0 from 2 running requests: those steps move no draft counter (vLLM
    PR #54748), while tokens still flow."""
    config = fast(
        backend="vllm",
        speculative_num_draft_tokens=4,
        accept_length=2.0,
        adaptive_drafts=((1, 3), (2, 0)),
    )
    sim = await start_sim(config)
    async with client_for(sim) as c:
        await stream_chunks(c, VLLM_BODY, "/v1/completions")
        alone = vllm.metrics_from_text((await c.get("/metrics")).text)
        await asyncio.gather(*(stream_chunks(c, VLLM_BODY, "/v1/completions") for _ in range(3)))
        after = vllm.metrics_from_text((await c.get("/metrics")).text)
    drafted = [d for record in sim.emitted for d in record.step_drafted]
    decode_steps = sum(len(record.step_tokens) - 1 for record in sim.emitted)  # 1st: prefill
    assert set(drafted) == {3} and len(drafted) < decode_steps  # some steps ran at K = 0
    assert alone.spec_drafts_total == len(sim.emitted[0].step_drafted) > 0
    assert after.spec_drafts_total == len(drafted)
    assert after.spec_draft_tokens_total == sum(drafted)
    assert after.generation_tokens_total == 4 * 40


@pytest.mark.parametrize(("drafts", "gauges"), [(1, (1, 2)), (0, (0, 1))])
async def test_sglang_gauges_show_the_last_batch(
    start_sim: StartSim, client_for: Client, drafts: int, gauges: tuple[int, int]
) -> None:
    """`spec_num_steps` / `spec_num_draft_tokens` are the active setting (steps + 1 at topk 1,
    SGLang's adaptive worker), not the launch flags; a batch at 0 steps verifies nothing."""
    config = fast(adaptive_drafts=((1, drafts),), extra_args={"decode_log_interval": 1})
    sim = await start_sim(config)
    async with client_for(sim) as c:
        meta = (await c.post("/generate", json=generate_body(8, stream=False))).json()["meta_info"]
        text = (await c.get("/metrics")).text
        info = (await c.get("/server_info")).json()
    assert sample_value(text, "sglang:spec_num_steps") == gauges[0]
    assert sample_value(text, "sglang:spec_num_draft_tokens") == gauges[1]
    assert info["speculative_num_steps"] == 2  # the launch flag stays what it was
    assert info["speculative_adaptive"] is True
    assert (meta.get("spec_verify_ct", 0) == 0) == (drafts == 0)


async def test_a_server_drafting_nothing_is_no_baseline(start_sim: StartSim) -> None:
    """Adaptive at k = 0 from a batch of one: it drafts nothing, yet is refused as a baseline."""
    sim = await start_sim(fast(adaptive_drafts=((1, 0),)))
    protocol = Protocol(1, 0, 8, 0.0, "p")
    with pytest.raises(NotABaseline, match="an adaptive server at k = 0"):
        await take_snapshot(Target(sim.url), protocol, kind=SnapshotKind.BASELINE)
