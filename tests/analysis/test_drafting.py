"""Effective draft length, duty cycle and switches (`analysis.drafting`, `session.drafting`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specmon.analysis.by_load import band_label, band_of, by_load, load_interval
from specmon.analysis.drafting import Drafting, draft_level, draft_steps, drafting
from specmon.model import Histogram, ServerInfo, ServerMetrics, SpecConfig
from specmon.session.drafting import HOLD_S, DraftingTracker
from specmon.whatif.text import advisor_flags


def vllm(drafts: float, tokens: float, itl_count: float) -> ServerMetrics:
    """vLLM's counters: drafts, draft tokens and the per-step ITL observations."""
    itl = Histogram(((float("inf"), itl_count),), 0.0, itl_count)
    return ServerMetrics(spec_drafts_total=drafts, spec_draft_tokens_total=tokens, itl_seconds=itl)


def sglang(passes: float, steps: float, draft_tokens: float) -> ServerMetrics:
    """SGLang's decode passes and the last batch's gauges."""
    return ServerMetrics(
        decode_passes_total=passes, spec_num_steps=steps, spec_num_draft_tokens=draft_tokens
    )


def test_vllm_k0_steps_count_only_as_steps() -> None:
    """A Dynamic SD step at K = 0 moves no draft counter (vLLM PR #54748): 30 of 100 steps
    drafted 3 tokens each."""
    part = draft_steps(vllm(0, 0, 0), vllm(30, 90, 100))
    assert part is not None
    figures = drafting([part])
    assert figures == Drafting(3.0, 0.3, "counters")
    assert figures.off and draft_level(figures) == 0
    assert figures.per_step == pytest.approx(0.9)


def test_idle_and_no_speculation_have_no_figure() -> None:
    assert draft_steps(vllm(5, 15, 40), vllm(5, 15, 40)) is None  # nothing decoded
    assert draft_steps(sglang(10, 0, 0), sglang(20, 0, 0)) is None  # SGLang without spec
    assert draft_steps(ServerMetrics(), ServerMetrics()) is None
    assert drafting([]) is None


def test_sglang_gauges_weigh_by_decode_passes() -> None:
    on = draft_steps(sglang(0, 3, 4), sglang(60, 3, 4))
    off = draft_steps(sglang(60, 3, 4), sglang(100, 0, 1))  # steps 0: draft tokens 1
    assert on is not None and off is not None
    figures = drafting([on, off])
    assert figures is not None
    assert figures.draft_length == 3.0 and figures.duty_cycle == pytest.approx(0.6)
    assert draft_level(figures) == 3


def test_sglang_passes_count_from_their_first_appearance() -> None:
    """A fresh server has no `cuda_graph_passes_total` before its first decode step."""
    part = draft_steps(ServerMetrics(spec_num_steps=2, spec_num_draft_tokens=3), sglang(40, 2, 3))
    assert part is not None and part.steps == 40 and part.draft_tokens == 80


def test_sglang_ngram_drafts_at_steps_0() -> None:
    """The real 0.5.17 NGRAM capture: `spec_num_steps` 0, `spec_num_draft_tokens` 4."""
    part = draft_steps(sglang(100, 0, 4), sglang(217, 0, 4))
    assert part is not None
    assert drafting([part]) == Drafting(3.0, 1.0, "gauges")


def test_llamacpp_has_a_length_but_no_duty_cycle() -> None:
    before = ServerMetrics(spec_drafts_total=10, spec_draft_tokens_total=40)
    after = ServerMetrics(spec_drafts_total=20, spec_draft_tokens_total=75)
    figures = drafting([p for p in [draft_steps(before, after)] if p])
    assert figures == Drafting(3.5, None, "counters")
    assert not figures.off


def test_a_switch_must_be_seen_for_hold_s() -> None:
    tracker = DraftingTracker(300)
    total = [0.0, 0.0, 0.0]

    def scrape(t: float, drafts: float, per_draft: int, steps: float) -> str | None:
        total[0] += drafts
        total[1] += drafts * per_draft
        total[2] += steps
        switch = tracker.add(t, vllm(*total))
        return None if switch is None else switch.text

    assert scrape(0, 0, 3, 0) is None  # the start of the window
    assert scrape(1, 100, 3, 100) is None  # the first setting: where the server is
    assert tracker.level == 3
    assert scrape(2, 0, 3, 100) is None  # off, seen once: maybe a dip
    assert scrape(3, 100, 3, 100) is None  # back: a transient, no switch
    assert (tracker.switches, tracker.transients) == (0, 1)
    for t in range(4, 4 + int(HOLD_S)):
        assert scrape(t, 0, 3, 100) is None  # off, seen for less than HOLD_S
    assert scrape(4 + HOLD_S, 0, 3, 100) == "drafting k 3 → off (speculation off at this load)"
    t = 5 + HOLD_S
    assert scrape(t, 100, 1, 100) is None
    assert scrape(t + HOLD_S, 100, 1, 100) == "drafting off → k 1"
    assert tracker.switches == 2
    # "Now" is the intervals since the change, without the one spanning it.
    figures = tracker.now(t + HOLD_S, 60.0)
    assert figures is not None and figures.draft_length == 1.0 and figures.duty_cycle == 1.0
    tracker.reset()
    assert tracker.level is None and tracker.switches == 0 and tracker.now(8, 10) is None


def _setting(t: float) -> int:
    """A server's true setting: k 3, a 1 s dip to k 0 at 20 s, k 1 from 40 s on."""
    if 20.0 <= t < 21.0:
        return 0
    return 1 if t >= 40.0 else 3


def _counters_at(t: float) -> ServerMetrics:
    """vLLM's counters at `t` for `_setting`: 100 decode steps a second, a draft of each step
    at k > 0 (integrated over 10 ms slices)."""
    drafts = tokens = 0.0
    for i in range(int(t * 100)):
        k = _setting(i / 100)
        drafts += 1 if k else 0
        tokens += k
    return vllm(drafts, tokens, int(t * 100))


@pytest.mark.parametrize(("every", "phase"), [(1.0, 0.0), (1.0, 0.5), (0.7, 0.3), (3.0, 1.9)])
def test_the_switch_count_does_not_depend_on_the_readers_phase(every: float, phase: float) -> None:
    """Each surface scrapes at its own interval and phase; the 1 s dip is no switch for any of
    them, and the change to k 1 is one switch for each."""
    tracker = DraftingTracker(300)
    t = phase
    while t < 60.0:
        tracker.add(t, _counters_at(t))
        t += every
    assert tracker.switches == 1 and tracker.level == 1
    # The interval spanning a change is never in "now": it is the held setting's figures.
    figures = tracker.now(t, 10.0)
    assert figures is not None and figures.draft_length == 1.0 and figures.duty_cycle == 1.0


def test_figures_by_load_band() -> None:
    """Two intervals at 1 running request drafting k = 3, one at 20 drafting nothing."""
    light_a = ServerMetrics(
        spec_drafts_total=0,
        spec_draft_tokens_total=0,
        spec_accepted_tokens_total=0,
        generation_tokens_total=0,
        num_running_reqs=1,
        itl_seconds=Histogram(((1.0, 0),), 0, 0),
    )
    light_b = replace(
        light_a,
        spec_drafts_total=100,
        spec_draft_tokens_total=300,
        spec_accepted_tokens_total=120,
        generation_tokens_total=220,
        itl_seconds=Histogram(((1.0, 100),), 0, 100),
    )
    heavy = replace(
        light_b,
        generation_tokens_total=2220,
        num_running_reqs=20,
        itl_seconds=Histogram(((1.0, 2100),), 0, 2100),
    )
    intervals = [load_interval(light_a, light_b, 2.0), load_interval(light_b, heavy, 4.0)]
    assert band_of(0.4) is None and band_of(3) == 2 and band_label(16) == "16-31"
    one, twenty = by_load(i for i in intervals if i is not None)
    assert (one.start, one.draft_length, one.duty_cycle, one.off) == (1, 3.0, 1.0, False)
    assert one.accept_length == pytest.approx(2.2) and one.tok_s == 110.0
    # The interval into the heavy load: running 1 → 20, band 8-15 by its mean (10.5).
    assert (twenty.start, twenty.off, twenty.duty_cycle) == (8, True, 0.0)
    assert twenty.tok_s == 500.0 and twenty.per_request_tok_s == pytest.approx(500 / 10.5)
    # Marked as spanning a change of setting, the interval into the heavy load is in no band.
    marked = [i if i is None or i.running < 2 else replace(i, transition=True) for i in intervals]
    assert [b.start for b in by_load(i for i in marked if i is not None)] == [1]


def test_an_interval_that_decoded_nothing_is_idle_whatever_the_gauge_says() -> None:
    """SGLang's `num_running_reqs` keeps its last value while idle: 10 s decoding 1000 tokens
    at 1 running, then 30 s with the gauge still at 1 and no token decoded. The idle 30 s are
    in no band: the 1-running band decodes 100 tok/s over its 10 s, not 25 over 40."""
    start = ServerMetrics(realtime_decode_tokens_total=0, num_running_reqs=1)
    busy = replace(start, realtime_decode_tokens_total=1000)
    idle = load_interval(busy, busy, 30.0)
    assert idle is not None and idle.idle and idle.running == 1
    decoding = load_interval(start, busy, 10.0)
    assert decoding is not None and not decoding.idle
    (one,) = by_load([decoding, idle])
    assert (one.start, one.seconds, one.tok_s, one.per_request_tok_s) == (1, 10.0, 100.0, 100.0)
    assert by_load([idle]) == ()


def _info(backend: str, **args: object) -> ServerInfo:
    spec = SpecConfig("EAGLE3", 3, 1, 4)
    return ServerInfo(backend, "1", "m", 1, 1, 1, spec, 1, False, None, True, args)


def test_advice_on_an_adaptive_server_is_in_its_own_settings() -> None:
    """SGLang's bucket for the load now (`speculative_adaptive` in its args); vLLM's Dynamic SD
    range when it was seen drafting otherwise than its flags; the launch flags otherwise."""
    flag_for, off = advisor_flags(
        _info("sglang", speculative_adaptive=True), differs=False, running=12
    )
    assert flag_for(2) == '"8": {"candidate_steps": [2]} in --speculative-adaptive-config'
    assert off == '"8": {"candidate_steps": [0]} in --speculative-adaptive-config'
    flag_for, off = advisor_flags(_info("vllm"), differs=True, running=1)
    assert (
        flag_for(2) == "[1, 1, 2] in num_speculative_tokens_per_batch_size of --speculative-config"
    )
    _, off = advisor_flags(_info("vllm"), differs=True, running=500)
    assert off.startswith("[256, max_num_seqs, 0]")
    flag_for, off = advisor_flags(_info("sglang"), differs=False, running=12)
    assert flag_for(2) == "--speculative-num-steps 2 --speculative-num-draft-tokens 3"
    assert off == "--speculative-algorithm (remove it)"
