"""The one baseline rule (`analysis.baseline_rule`): configuration and protocol filter, valid
before newer, a pinned baseline wins, the nearest named when none applies."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from snapshots import ARGS, PROTOCOL, T0, baseline, speculative

from specmon.analysis.baseline_rule import Pin, Rejected, Rule, Wanted, choose_baseline
from specmon.analysis.validity import Validity
from specmon.model import Snapshot

SPEC = speculative(100)
WANTED = Wanted.of(PROTOCOL)
VALID = Validity(())
UNVERIFIED = Validity((), ("the baseline server cannot be read",))
STALE = Validity(("the baseline server restarted since",))


def at_concurrency(snapshot: Snapshot, concurrency: int) -> Snapshot:
    return replace(snapshot, protocol=replace(snapshot.protocol, concurrency=concurrency))


def test_another_protocol_is_no_candidate_and_is_named_when_none_applies() -> None:
    streams = at_concurrency(baseline(1, at=T0 + 100), 16)
    choice = choose_baseline([streams], SPEC.server, WANTED, lambda _s: VALID)
    assert choice.baseline is None and choice.rule == Rule.NONE_APPLIES
    assert choice.rejected == Rejected(
        streams, ("was taken with concurrency 16, the probe uses 1",)
    )
    assert choice.why_none() == (
        "no baseline applies: #1 (http://10.1.230.174:8000) was taken with concurrency 16, the "
        "probe uses 1"
    )


def test_a_single_stream_baseline_beats_a_newer_one_of_sixteen_streams() -> None:
    """After `ab` on another server: its 16-stream plain bench is newer, never chosen."""
    one = baseline(1)
    streams = at_concurrency(baseline(2, at=T0 + 100), 16)
    choice = choose_baseline([one, streams], SPEC.server, WANTED, lambda _s: VALID)
    assert choice.baseline == one and choice.rule == Rule.LATEST_VALID
    assert choice.considered == 2
    assert choice.rejected is not None and choice.rejected.snapshot == streams


def test_valid_before_newer() -> None:
    older, newer = baseline(1), baseline(2, at=T0 + 100)
    verdicts = {1: VALID, 2: UNVERIFIED}
    choice = choose_baseline([older, newer], SPEC.server, WANTED, lambda s: verdicts[s.id or 0])
    assert choice.baseline == older
    assert choice.rejected == Rejected(
        newer, ("is unverified: the baseline server cannot be read",)
    )
    verdicts = {1: STALE, 2: UNVERIFIED}
    choice = choose_baseline([older, newer], SPEC.server, WANTED, lambda s: verdicts[s.id or 0])
    assert (choice.baseline, choice.rule) == (newer, Rule.LATEST_UNVERIFIED)


def test_a_pinned_server_wins_over_a_newer_baseline_of_another() -> None:
    """`--baseline-url`: a newer stored baseline whose server is gone does not displace it."""
    pinned = replace(baseline(1), url="http://plain:30000")
    gone = replace(baseline(2, at=T0 + 100), url="http://gone:30001")
    verdicts = {1: VALID, 2: UNVERIFIED}
    choice = choose_baseline(
        [pinned, gone],
        SPEC.server,
        WANTED,
        lambda s: verdicts[s.id or 0],
        pin=Pin(url="http://plain:30000"),
    )
    assert (choice.baseline, choice.rule) == (pinned, Rule.PINNED_URL)
    assert choice.pinned == "--baseline-url http://plain:30000"
    # Even when the other is valid and newer, and when the pinned one is stale.
    choice = choose_baseline(
        [pinned, gone], SPEC.server, WANTED, lambda s: STALE, pin=Pin(url="http://plain:30000")
    )
    assert choice.baseline == pinned
    # A pinned server with no snapshot: none, said so.
    none = choose_baseline([gone], SPEC.server, WANTED, lambda s: VALID, pin=Pin(url="http://x"))
    assert none.baseline is None
    assert none.why_none() == ("no snapshot of http://x (--baseline-url) in the store")


def test_a_pinned_id_is_the_baseline_whatever_it_is() -> None:
    streams = at_concurrency(baseline(7), 16)
    choice = choose_baseline(
        [baseline(1), streams], SPEC.server, WANTED, lambda s: VALID, pin=Pin(7)
    )
    assert (choice.baseline, choice.rule) == (streams, Rule.PINNED_ID)
    missing = choose_baseline([baseline(1)], SPEC.server, WANTED, lambda s: VALID, pin=Pin(9))
    assert missing.why_none() == ("snapshot #9 (--baseline) is not in the store")


def test_other_flags_and_later_baselines_are_no_candidates() -> None:
    flags = baseline(1, args={**ARGS, "mem_fraction_static": 0.7})
    later = baseline(2, at=SPEC.created_at + 10)
    choice = choose_baseline(
        [flags, later], SPEC.server, WANTED, lambda s: VALID, before=SPEC.created_at
    )
    assert choice.baseline is None
    assert choice.rejected is not None
    assert choice.rejected.reasons in (
        ("differs in flag mem_fraction_static",),
        ("was taken after the probe",),
    )


def test_a_baseline_of_another_backend_is_named_by_its_backend_not_its_flags() -> None:
    other = replace(SPEC.server, backend="vllm", args={"max_num_seqs": 256})
    choice = choose_baseline([baseline(1)], other, WANTED, lambda _s: VALID)
    assert choice.baseline is None and choice.rejected is not None
    assert choice.rejected.reasons == ("is from another backend (SGLang baseline, vLLM server)",)


def test_any_max_tokens_prefers_the_default_size() -> None:
    """`check`: a baseline of the dashboard's size first, so both choose the same one."""
    ours = replace(baseline(1), protocol=replace(PROTOCOL, max_tokens=256))
    other = baseline(2, at=T0 + 100)  # 500 tokens, newer
    wanted = Wanted(PROTOCOL.prompt, prefer_tokens=256)
    choice = choose_baseline([ours, other], SPEC.server, wanted, lambda s: VALID)
    assert choice.baseline == ours
    assert choice.rejected == Rejected(other, ("was taken with max_tokens 500, not 256",))
    choice = choose_baseline([other], SPEC.server, wanted, lambda s: VALID)
    assert choice.baseline == other  # none of its size: it follows the baseline's


CANDIDATE = st.builds(
    lambda i, at, conc, tokens, url, mem: replace(
        baseline(i, at=T0 + at, args={**ARGS, "mem_fraction_static": mem}),
        url=url,
        protocol=replace(PROTOCOL, concurrency=conc, max_tokens=tokens),
    ),
    st.integers(1, 10_000),
    st.floats(0, 3000),
    st.sampled_from([1, 4, 16]),
    st.sampled_from([256, 500]),
    st.sampled_from(["http://a:1", "http://b:2", "http://c:3"]),
    st.sampled_from([0.8, 0.7]),
)
STATES = st.sampled_from([VALID, UNVERIFIED, STALE])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(CANDIDATE, max_size=8, unique_by=lambda s: s.id),
    st.dictionaries(st.integers(1, 10_000), STATES),
)
def test_the_choice_is_the_best_candidate_by_the_rule(
    candidates: list[Snapshot], verdicts: dict[int, Validity]
) -> None:
    def judge(s: Snapshot) -> Validity:
        return verdicts.get(s.id or 0, UNVERIFIED)

    choice = choose_baseline(candidates, SPEC.server, WANTED, judge)
    eligible = [
        s
        for s in candidates
        if s.protocol.concurrency == 1
        and s.protocol.max_tokens == PROTOCOL.max_tokens
        and s.server.args["mem_fraction_static"] == ARGS["mem_fraction_static"]
    ]
    assert choice.considered == len(candidates)
    if not eligible:
        assert choice.baseline is None
        assert (choice.rejected is None) == (not candidates)
        return
    chosen = choice.baseline
    assert chosen in eligible
    best = max(judge(s).confirmed for s in eligible)
    assert judge(chosen).confirmed == best  # valid before newer
    same = [s for s in eligible if judge(s) == judge(chosen)]
    assert chosen.created_at == max(s.created_at for s in same)  # newest among equals
