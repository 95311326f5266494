"""The advisor's findings: each names the flag to change and the evidence."""

from __future__ import annotations

from dataclasses import replace

from specmon.analysis.acceptance import from_histogram
from specmon.analysis.comparison import Verdict, compare
from specmon.analysis.cycle_model import CyclePoint, fit_cycle
from specmon.analysis.pooled import Pooled
from specmon.analysis.representative import TrafficGap
from specmon.model import Protocol, RunFigures, ServerInfo, Snapshot, SpecConfig
from specmon.whatif.advice import advise
from specmon.whatif.prediction import WhatIf, what_if

PROTOCOL = Protocol(3, 1, 256, 0.0, "p")
BASE = Pooled(runs=3, decode_tok_s=100.0, rel_se=0.01, accept_length=None, cycle_ms=None)


def _info(
    version: str = "0.5.17", topk: int = 1, algorithm: str = "EAGLE3", **args: object
) -> ServerInfo:
    spec = SpecConfig(algorithm, 3, topk, 4)
    return ServerInfo(
        "sglang", version, "m", 1, 1, 1, spec, 1, False, None, True, {"model_path": "m", **args}
    )


def _now(accept: float, cycle: float) -> Pooled:
    return Pooled(3, 1000 * accept / cycle, 0.005, accept, cycle)


def _whatif(now: Pooled, histogram: list[int], *more: CyclePoint) -> WhatIf:
    positions = from_histogram(histogram)
    assert positions is not None and now.cycle_ms is not None
    points = [CyclePoint(3, now.cycle_ms, "now"), *more]
    cycle = fit_cycle(points, BASE.ms_per_token, model_drafts=True)
    assert cycle is not None
    result = what_if(now, positions, 3, cycle, BASE)
    assert result is not None
    return result


def _advise(
    info: ServerInfo, now: Pooled, whatif: WhatIf | None, earlier: list[Snapshot] | None = None
) -> list:
    return advise(
        info,
        protocol=PROTOCOL,
        now=now,
        comparison=compare(now, BASE),
        whatif=whatif,
        earlier=earlier or [],
        flag_for=lambda k: f"--k {k}",
        off_flag="--off",
    )


def test_under_break_even_names_the_draft_length_predicted_to_win() -> None:
    # 3 drafts cost 30 ms against a 10 ms step: accept 2.0 < break-even 3; acceptance falls
    # steeply with position. A bench at k = 1 measured its cycle (16.7 ms, AL 1.6): k = 1 wins
    # beyond its interval.
    now = _now(2.0, 30.0)
    measured = _whatif(now, [40, 55, 4, 1], CyclePoint(1, 16.7, "#2"))
    found = _advise(_info(), now, measured)
    loses = [a for a in found if "speculation loses" in a.text]
    assert len(loses) == 1 and loses[0].level == "warn"
    assert loses[0].flag == "--k 1" and "k = 1 is predicted to win (+" in loses[0].text
    k1 = measured.at(1)
    assert k1 is not None and k1.comparison is not None
    assert k1.comparison.speedup.low is not None and k1.comparison.speedup.low > 0
    assert "accept length 2.00 < break-even 3.00" in loses[0].evidence
    shorter = [a for a in found if "shorter draft" in a.text]
    assert len(shorter) == 1 and shorter[0].flag == "--k 1"
    assert shorter[0].evidence.startswith("k = 1: 114.")


def test_a_length_whose_interval_holds_zero_is_not_predicted_to_win() -> None:
    # One cycle measured: the interval at k = 1 reaches the fixed-cost case (T = 30 ms), where
    # k = 1 is no faster than now. Its point estimate wins, its interval holds 0: the advisor
    # says it might, and to bench it, not that it is predicted to win.
    now = _now(2.0, 30.0)
    whatif = _whatif(now, [40, 55, 4, 1])
    k1 = whatif.at(1)
    assert k1 is not None and k1.comparison is not None and k1.comparison.speedup.value > 0
    assert k1.comparison.speedup.low is not None and k1.comparison.speedup.low <= 0
    found = _advise(_info(), now, whatif)
    loses = [a for a in found if "speculation loses" in a.text]
    assert len(loses) == 1 and loses[0].flag == "--k 1"
    assert "k = 1 might win" in loses[0].text and "interval holds 0" in loses[0].text
    assert "predicted to win" not in loses[0].text
    assert not [a for a in found if "shorter draft" in a.text]


def test_no_length_wins_names_the_flags_that_turn_speculation_off() -> None:
    now = _now(1.2, 30.0)  # barely any acceptance, an expensive cycle
    loses = [a for a in _advise(_info(), now, _whatif(now, [90, 6, 3, 1])) if "loses" in a.text]
    assert [(a.text, a.flag) for a in loses] == [
        ("speculation loses: no draft length is predicted to win", "--off")
    ]


def test_a_speedup_within_noise_is_no_loss() -> None:
    # Under break-even by the point estimate (−0.8%), but the interval holds 0: the verdict is
    # "within noise", and the advisor says nothing about losing (it used to, on the point).
    noisy = Pooled(runs=3, decode_tok_s=100.0, rel_se=0.05, accept_length=None, cycle_ms=None)
    now = Pooled(3, 99.2, 0.05, 2.0, 1000 * 2.0 / 99.2)
    comparison = compare(now, noisy)
    assert comparison is not None and comparison.margin is not None and comparison.margin < 0
    assert comparison.verdict == Verdict.WITHIN_NOISE
    found = advise(
        _info(),
        protocol=PROTOCOL,
        now=now,
        comparison=comparison,
        whatif=_whatif(now, [90, 6, 3, 1]),
        earlier=[],
        flag_for=lambda k: f"--k {k}",
        off_flag="--off",
    )
    assert not [a for a in found if "loses" in a.text]


def test_nothing_to_change_when_the_current_length_is_best() -> None:
    now = _now(3.7, 16.0)
    assert _advise(_info(), now, _whatif(now, [1, 2, 3, 94])) == []


def test_no_op_flag_of_the_version() -> None:
    now = _now(3.0, 16.0)
    found = _advise(_info(num_continuous_decode_steps=4), now, None)
    assert [(a.flag, a.text) for a in found] == [
        (
            "--num-continuous-decode-steps",
            "--num-continuous-decode-steps 4 does nothing in SGLang 0.5.17",
        )
    ]
    assert _advise(_info(num_continuous_decode_steps=1), now, None) == []  # the default
    assert _advise(_info("0.3.5", num_continuous_decode_steps=4), now, None) == []


def test_tree_drafts_get_no_what_if_but_ngram_topk_is_ignored() -> None:
    now = _now(3.0, 16.0)
    tree = _advise(_info(topk=4), now, None)
    assert [a.flag for a in tree] == ["--speculative-eagle-topk"]
    assert _advise(_info(topk=10, algorithm="NGRAM"), now, None) == []


def test_acceptance_fell_since_an_earlier_snapshot_of_the_configuration() -> None:
    info = _info("0.5.23")
    run = RunFigures(
        200,
        10,
        5.0,
        1.0,
        200.0,
        210.0,
        3.0,
        3.0,
        60,
        14.0,
        14.0,
        15.0,
        decode_tokens=180,
        decode_s=0.84,
        decode_steps=60,
    )
    earlier = Snapshot(1.0, "u", None, replace(info, version="0.5.17"), PROTOCOL, (run,), id=7)
    found = _advise(info, _now(2.5, 14.0), None, [earlier])
    assert len(found) == 1 and found[0].flag is None
    assert found[0].text == "acceptance fell: accept length 2.50, was 3.00 in snapshot #7"
    assert "the upgrade 0.5.17 → 0.5.23" in found[0].evidence
    assert "temperature ≠ 0" in found[0].evidence
    assert _advise(info, _now(2.95, 14.0), None, [earlier]) == []  # within 5%: noise
    other = replace(earlier, protocol=replace(PROTOCOL, max_tokens=500))
    assert _advise(info, _now(2.5, 14.0), None, [other]) == []  # another protocol


def _traffic_advice(probe: float, traffic: float) -> list:  # type: ignore[type-arg]
    # Cycle 20 ms against a 10 ms baseline step: break-even 2.0.
    now = _now(probe, 20.0)
    gap = TrafficGap(probe, traffic, "counters", 0.01)
    found = advise(
        _info(),
        protocol=PROTOCOL,
        now=now,
        comparison=compare(now, BASE),
        whatif=None,
        earlier=[],
        flag_for=lambda k: f"--k {k}",
        off_flag="--off",
        traffic=gap,
    )
    return [a for a in found if "not representative" in a.text]


def test_an_unrepresentative_probe_is_judged_by_the_traffics_accept_length() -> None:
    (loses,) = _traffic_advice(3.7, 1.8)  # the probe wins big; the traffic is under break-even
    assert loses.level == "warn" and loses.flag == "--off"
    assert "speculation loses (-10%)" in loses.text
    assert "your traffic accepts 1.80, the probe 3.70" in loses.evidence
    assert "break-even 2.00" in loses.evidence
    (gains,) = _traffic_advice(3.7, 2.4)
    assert gains.level == "info" and gains.flag is None
    assert "speculation gains +20%" in gains.text
    assert _traffic_advice(2.1, 2.0) == []  # within 10%: the probe stands for the traffic
