"""A speedup per probe category against the simulator: `bench --probe-prompts` on the plain
server stores a baseline per category (its protocol names its prompt), the dashboard looks each
one up and compares each category's probes with its own baseline, within 3% of the speed ratio
the simulator emitted (accept length × plain step / cycle, drawn)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import snapshots
from watching import sampled

from specmon.analysis.validity import LifetimeState, relaunched_for_speculation
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol
from specmon.probe_prompts import BUILTIN_SET, DEFAULT_PROMPT, category_protocols
from specmon.session.baseline_state import NOT_SAMPLED, RELAUNCH_UNREAD, BaselineState
from specmon.session.live import LiveState
from specmon.session.store_baseline import StoreBaseline
from specmon.session.watch import Watch
from specmon.sim import EmittedRequest, SimConfig, SimServer
from specmon.storage.store import Store
from specmon.target import Target

# Steps long enough that scheduling jitter on a busy machine stays within a percent or two of a
# 300-token run (tests/cli/test_bench_accuracy.py); four draft tokens so repetitive's 3.6 holds.
SPEC = SimConfig(
    speculative_num_draft_tokens=4,
    plain_step_ms=4.0,
    cycle_ms=8.0,
    ttft_ms=5.0,
    prefill_ms_per_token=0.0,
    concurrency_slowdown=0.0,
    seed=3,
)
PLAIN = replace(SPEC, speculative_algorithm=None)
PROMPTS = tuple(p for p in BUILTIN_SET if p.category in ("code", "chat", "repetitive"))
PROBE = Protocol(2, 0, 300, 0.0, DEFAULT_PROMPT)


async def probe(watch: Watch, live: LiveState, tokens: int) -> None:
    outcome = await watch.probe_once(tokens)
    live.on_probe(outcome.wall, outcome.t, outcome.figures, outcome.result, outcome.category)


def emitted_tok_s(records: Sequence[EmittedRequest], category: str) -> float:
    """The decode tok/s the simulator emitted over its requests of `category`, pooled as specmon
    pools runs (Σ tokens after the first / Σ their seconds), from its own send times."""
    mine = [r for r in records if r.category == category]
    assert mine, category
    tokens = sum(r.chunk_completion_tokens[-1] - r.chunk_completion_tokens[0] for r in mine)
    seconds = sum(r.chunk_send_mono[-1] - r.chunk_send_mono[0] for r in mine)
    return tokens / seconds


@pytest.mark.slow
async def test_each_category_is_compared_with_its_own_baseline(tmp_path: Path) -> None:
    plain, spec = SimServer(PLAIN), SimServer(SPEC)
    await plain.start()
    await spec.start()
    try:
        with Store(tmp_path / "s.db") as store:
            # bench --probe-prompts on the plain server: one baseline per category.
            for protocol in category_protocols(PROBE, PROMPTS).values():
                snapshot = await take_snapshot(
                    Target(plain.url), protocol, kind=SnapshotKind.BASELINE
                )
                store.save(snapshot)
            live = LiveState(spec.url, PROBE, max_age_s=1800, probe_every=10, prompts=PROMPTS)
            watch = Watch(Target(spec.url), interval=0.1, telemetry=False, prompts=PROMPTS)
            async with sampled(watch, live) as first:
                StoreBaseline(store, live).update(first.t, first.wall)
                for _ in range(2 * len(PROMPTS)):
                    await probe(watch, live, 300)
                view = live.view(now_wall=first.wall, stale_after=60)
    finally:
        await spec.stop()
        await plain.stop()
    categories = {c.category: c for c in view.spec.categories}
    assert list(categories) == ["code", "chat", "repetitive"]
    for name, category in categories.items():
        assert category.comparison is not None, category.why_no_speedup
        assert category.why_no_speedup is None
        gain = 1 + category.comparison.speedup.value
        # Against what the simulator emitted (its own send times: a stall of this busy machine
        # slows both alike), and its accept length against the category's configured one (two
        # 300-token probes draw it within a few %; test_probe_versus_traffic.py checks it to 2%
        # over longer probes).
        truth = emitted_tok_s(spec.emitted, name) / emitted_tok_s(plain.emitted, name)
        assert gain == pytest.approx(truth, rel=0.03), name
        assert category.accept_length == pytest.approx(SPEC.accept_length_of(name), rel=0.08)
    # Each against its own: code's baseline is not chat's.
    assert len(set(live.category_baselines.found[n].id for n in categories)) == 3
    assert not any("benched with one prompt" in e.text for e in view.events)
    assert not [m for m in view.missing if m[0].startswith("speedup of")]


@pytest.mark.slow
async def test_a_category_without_a_baseline_says_why(tmp_path: Path) -> None:
    spec = SimServer(SPEC)
    await spec.start()
    try:
        with Store(tmp_path / "s.db") as store:
            live = LiveState(spec.url, PROBE, max_age_s=1800, probe_every=10, prompts=PROMPTS)
            watch = Watch(Target(spec.url), interval=0.1, telemetry=False, prompts=PROMPTS)
            async with sampled(watch, live) as first:
                StoreBaseline(store, live).update(first.t, first.wall)
                for _ in range(len(PROMPTS)):
                    await probe(watch, live, 50)
                view = live.view(now_wall=first.wall, stale_after=60)
    finally:
        await spec.stop()
    assert [c.comparison for c in view.spec.categories] == [None] * 3
    missing = dict(view.missing)
    assert missing["speedup of code"] == "no baseline in the store"


def test_a_category_baseline_s_lifetime_follows_the_dashboard_s_rules() -> None:
    """Taken at the watched address: relaunched for speculation by design (unread right after
    a restart); on a server the dashboard does not sample: unverified, so valid but unconfirmed."""
    state = BaselineState("http://10.1.230.174:8000", PROBE, max_age_s=1800)
    spec_info = snapshots.speculative(2).server
    here = replace(snapshots.baseline(1), url=state.watched_url)
    assert state.lifetime_for(here, spec_info) == relaunched_for_speculation()
    elsewhere = replace(here, url="http://10.1.230.175:8000")
    assert state.lifetime_for(elsewhere, spec_info) == NOT_SAMPLED
    assert NOT_SAMPLED.state == LifetimeState.UNVERIFIED
    state.watched_current = False
    assert state.lifetime_for(here, spec_info) == RELAUNCH_UNREAD
