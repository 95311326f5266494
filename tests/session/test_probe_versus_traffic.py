"""The dashboard's state against the simulator with category-dependent acceptance: per-category
accept lengths within 2% of the simulator's truth, and the probe-versus-traffic gap named when
the server's traffic is of another category (never when it matches)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

import httpx
import pytest
from watching import sampled

from specmon.model import Protocol
from specmon.probe_prompts import BUILTIN_SET, ProbePrompt
from specmon.session.live import LiveState
from specmon.session.watch import Watch
from specmon.sim import SimConfig, SimServer
from specmon.sources.probe import run_probe
from specmon.target import Target

# Millisecond cycles at k = 3 (four draft tokens: repetitive text's 3.6 is not clamped).
CONFIG = SimConfig(
    speculative_num_draft_tokens=4,
    plain_step_ms=0.5,
    cycle_ms=0.5,
    ttft_ms=1.0,
    prefill_ms_per_token=0.0,
    concurrency_slowdown=0.0,
)
PROMPT = {p.category: p for p in BUILTIN_SET}


@contextlib.asynccontextmanager
async def watched(
    prompts: Sequence[ProbePrompt],
) -> AsyncIterator[tuple[SimServer, Watch, LiveState]]:
    """A simulator, a Watch of it rotating `prompts`, and the LiveState its samples feed."""
    async with SimServer(CONFIG) as sim:
        watch = Watch(Target(sim.url), interval=0.1, telemetry=False, prompts=prompts)
        live = LiveState(sim.url, Protocol(5, 0, 256, 0.0, ""), max_age_s=1800, probe_every=10)
        async with sampled(watch, live):
            yield sim, watch, live


async def probe(watch: Watch, live: LiveState, tokens: int) -> None:
    outcome = await watch.probe_once(tokens)
    live.on_probe(outcome.wall, outcome.t, outcome.figures, outcome.result, outcome.category)


@pytest.mark.slow
async def test_each_category_is_pooled_apart_within_two_percent_of_the_truth() -> None:
    async with watched(BUILTIN_SET) as (_sim, watch, live):
        for _ in range(3 * len(BUILTIN_SET)):
            await probe(watch, live, tokens=1500)
        spec = live.view(now_wall=0.0, stale_after=60).spec
    assert [c.category for c in spec.categories] == [p.category for p in BUILTIN_SET]
    for category in spec.categories:
        truth = CONFIG.accept_length_of(category.category)
        assert category.runs == 3
        assert category.accept_length == pytest.approx(truth, rel=0.02), category.category
        assert category.decode_tok_s is not None


async def test_a_single_prompt_shows_no_category_rows() -> None:
    async with watched((PROMPT["code"],)) as (_sim, watch, live):
        await probe(watch, live, tokens=200)
        assert live.view(now_wall=0.0, stale_after=60).spec.categories == ()


async def traffic(url: str, prompt: str, stop: asyncio.Event, warm: asyncio.Event) -> None:
    """A client sending `prompt` back to back until `stop`; `warm` once two have finished (the
    server's counters then hold finished requests of this traffic, as after a probe interval)."""
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        done = 0
        while not stop.is_set():
            await run_probe(client, prompt=prompt, max_tokens=300)
            done += 1
            if done == 2:
                warm.set()


@pytest.mark.slow
@pytest.mark.parametrize(("background", "named"), [("chat", True), ("code", False)])
async def test_the_gap_is_named_only_when_the_traffic_is_of_another_category(
    background: str, named: bool
) -> None:
    """The probe sends code (2.6); the server's traffic is chat (1.95): "not representative".
    With code traffic the two agree and nothing is said."""
    async with watched((PROMPT["code"],)) as (sim, watch, live):
        stop, warm = asyncio.Event(), [asyncio.Event() for _ in range(4)]
        clients = [
            asyncio.create_task(traffic(sim.url, PROMPT[background].prompt, stop, w)) for w in warm
        ]
        try:
            await asyncio.wait_for(asyncio.gather(*(w.wait() for w in warm)), timeout=30)
            for _ in range(5):
                await probe(watch, live, tokens=300)
        finally:
            stop.set()
            await asyncio.gather(*clients)
        gap = live.traffic_gap()
        view = live.view(now_wall=0.0, stale_after=60)
    assert gap is not None
    assert gap.probe == pytest.approx(2.6, rel=0.05)
    # The server's counters hold every request: four clients' and the probe's own.
    mix = (4 * CONFIG.accept_length_of(background) + CONFIG.accept_length_of("code")) / 5
    assert gap.traffic == pytest.approx(mix, rel=0.08)
    assert gap.named is named
    assert view.spec.traffic_gap == gap
    said = [e.text for e in view.events if "not representative" in e.text]
    assert bool(said) is named
    assert all(text.startswith("your traffic accepts ") for text in said)
