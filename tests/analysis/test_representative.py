"""Probe versus traffic: the gap is named beyond 10% and beyond the probe's own noise only."""

from __future__ import annotations

import pytest
from runs import run

from specmon.analysis.pooled import pool, pool_groups
from specmon.analysis.rates import WindowAccept
from specmon.analysis.representative import only_probes, traffic_gap
from specmon.model import ServerMetrics


@pytest.mark.parametrize(
    ("accepts", "traffic", "named"),
    [
        ([3.7, 3.7, 3.7], 2.1, True),  # the example
        ([2.1, 2.1, 2.1], 2.1, False),  # matching traffic
        ([2.3, 2.3, 2.3], 2.1, False),  # 9.5%: within the 10% floor
        ([2.4, 2.4, 2.4], 2.1, True),  # 14%, steady probes
        ([1.9, 4.0, 3.0], 2.1, False),  # 28% on average, but the probes spread wider than that
        ([3.7], 2.1, False),  # one probe: its noise is unknown, nothing is named
    ],
)
def test_the_gap_is_named_beyond_noise(accepts: list[float], traffic: float, named: bool) -> None:
    gap = traffic_gap(pool([run(100.0, a) for a in accepts]), WindowAccept(traffic, "counters"))
    assert gap is not None
    assert gap.named is named
    assert ("not representative" in gap.sentence) is named


def test_the_sentence_gives_both_figures() -> None:
    gap = traffic_gap(pool([run(100.0, 3.7)] * 3), WindowAccept(2.1, "drafts"))
    assert gap is not None
    assert (
        gap.sentence == "your traffic accepts 2.10, the probe 3.70: the probe is not representative"
    )


def test_no_gap_without_a_counted_traffic_figure() -> None:
    probes = pool([run(100.0, 3.7)] * 3)
    assert traffic_gap(probes, None) is None
    assert traffic_gap(probes, WindowAccept(2.1, "gauge")) is None  # 40 steps: too short
    assert traffic_gap(pool([run(100.0)]), WindowAccept(2.1, "counters")) is None


def test_no_gap_against_a_traffic_figure_that_cannot_be() -> None:
    """An adaptive server that did not count its verify steps while off read 31.4 at k = 3 (at
    most 4 tokens a step): the dashboard and `check` judge no gap against it, by one rule."""
    probes = pool([run(100.0, 2.1)] * 3)
    assert traffic_gap(probes, WindowAccept(31.4, "counters"), draft_length=3) is None
    at_most = traffic_gap(probes, WindowAccept(4.0, "counters"), draft_length=3)
    assert at_most is not None and at_most.traffic == 4.0


def test_each_group_is_pooled_as_the_whole_is() -> None:
    code, chat = [run(90.0, 2.6), run(110.0, 2.6)], [run(70.0, 1.95)]
    groups = pool_groups({"code": code, "chat": chat})
    assert list(groups) == ["code", "chat"]
    assert groups["code"] == pool(code)
    assert groups["chat"].accept_length == pytest.approx(1.95)


def test_probes_alone_are_no_traffic_to_compare_with() -> None:
    # `check` on an idle server said "your traffic accepts 2.07, the probe 2.07: the probe is
    # representative" of the probe's own requests.
    probes = [run(100.0, 2.07)] * 3
    gap = traffic_gap(pool(probes), WindowAccept(2.07, "counters"), probes_alone=True)
    assert gap is not None and not gap.named
    assert "representative" not in gap.sentence
    assert "no traffic to compare the probe with" in gap.sentence
    far = traffic_gap(pool(probes), WindowAccept(3.5, "counters"), probes_alone=True)
    assert far is not None and not far.named  # a gap to the probes' own figure names nothing


@pytest.mark.parametrize(
    ("before", "after", "alone"),
    [
        (ServerMetrics(num_requests_total=10), ServerMetrics(num_requests_total=13), True),
        (ServerMetrics(num_requests_total=10), ServerMetrics(num_requests_total=14), False),
        (ServerMetrics(num_requests_total=10), ServerMetrics(num_requests_total=2), False),
        (
            ServerMetrics(generation_tokens_total=0),
            ServerMetrics(generation_tokens_total=1500),
            True,
        ),
        (
            ServerMetrics(generation_tokens_total=0),
            ServerMetrics(generation_tokens_total=1501),
            False,
        ),
        (ServerMetrics(), ServerMetrics(), False),  # nothing counted: traffic is not ruled out
    ],
)
def test_only_probes_counts_requests_then_tokens(
    before: ServerMetrics, after: ServerMetrics, alone: bool
) -> None:
    assert only_probes(before, after, [run(100.0, 2.0)] * 3) is alone  # 3 x 500 tokens
