"""Workers behind a router summed as one server: per-worker deltas with their own resets, a down
worker named and left out (never read as zero), gauges summed, averaged or maxed."""

from __future__ import annotations

from collections.abc import Sequence

from specmon.analysis.rates import counter_delta, server_accept_length
from specmon.analysis.worker_sums import WorkerScrape, WorkerSums, add_scrapes
from specmon.model import Histogram, ServerMetrics

W1, W2 = "http://w1:1", "http://w2:2"


def _m(gen: float, verify: float, **gauges: float) -> ServerMetrics:
    return ServerMetrics(generation_tokens_total=gen, spec_verify_calls_total=verify, **gauges)  # type: ignore[arg-type]


def _run(*rounds: Sequence[WorkerScrape]) -> list[WorkerSums]:
    sums: list[WorkerSums] = []
    for t, scrapes in enumerate(rounds):
        sums.append(add_scrapes(sums[-1] if sums else None, scrapes, wall=1000.0 + t))
    return sums


def test_the_first_scrape_sums_readings_and_later_ones_add_each_workers_delta() -> None:
    first, second = _run(
        [WorkerScrape(W1, _m(100, 40)), WorkerScrape(W2, _m(1000, 300))],
        [WorkerScrape(W1, _m(130, 50)), WorkerScrape(W2, _m(1060, 320))],
    )
    assert first.metrics.generation_tokens_total == 1100
    assert second.metrics.generation_tokens_total == 1100 + 30 + 60
    assert second.metrics.spec_verify_calls_total == 340 + 10 + 20
    assert not second.metrics.down_workers
    accept = server_accept_length(first.metrics, second.metrics)
    assert accept is not None and accept.value == 90 / 30


def test_a_restarted_worker_adds_its_count_since_the_restart_never_a_negative() -> None:
    sums = _run(
        [WorkerScrape(W1, _m(5000, 2000)), WorkerScrape(W2, _m(1000, 300))],
        [WorkerScrape(W1, _m(12, 4)), WorkerScrape(W2, _m(1060, 320))],
    )
    delta = counter_delta(
        sums[0].metrics.generation_tokens_total, sums[1].metrics.generation_tokens_total
    )
    assert delta is not None and not delta.reset and delta.value == 12 + 60
    assert [w.reset for w in sums[1].metrics.workers] == [True, False]


def test_a_down_worker_is_named_and_left_out_and_comes_back_without_a_spike() -> None:
    sums = _run(
        [WorkerScrape(W1, _m(100, 40)), WorkerScrape(W2, _m(1000, 300))],
        [WorkerScrape(W1, _m(130, 50)), WorkerScrape(W2, None, "connection refused")],
        [WorkerScrape(W1, _m(160, 60)), WorkerScrape(W2, None, "connection refused")],
        [WorkerScrape(W1, _m(190, 70)), WorkerScrape(W2, _m(9000, 3000))],
        [WorkerScrape(W1, _m(220, 80)), WorkerScrape(W2, _m(9010, 3004))],
    )
    totals = [s.metrics.generation_tokens_total for s in sums]
    assert totals == [1100, 1130, 1160, 1190, 1190 + 30 + 10]
    (down,) = sums[2].metrics.down_workers
    assert (down.url, down.error, down.down_since) == (W2, "connection refused", 1001.0)
    assert sums[2].metrics.workers[0].up
    assert not sums[3].metrics.down_workers


def test_gauges_are_summed_averaged_or_the_largest_over_the_workers_read() -> None:
    one = _m(1, 1, gen_throughput=100, num_running_reqs=2, spec_accept_length=3.0, token_usage=0.5)
    two = _m(1, 1, gen_throughput=50, num_running_reqs=1, spec_accept_length=2.0, token_usage=0.9)
    (sums,) = _run(
        [WorkerScrape(W1, one), WorkerScrape(W2, two), WorkerScrape("http://w3:3", None, "down")]
    )
    m = sums.metrics
    assert (m.gen_throughput, m.num_running_reqs) == (150, 3)
    assert (m.spec_accept_length, m.token_usage) == (2.5, 0.9)
    assert m.num_queue_reqs is None  # no worker said: unknown, not zero


def test_histograms_and_positions_add_per_worker_deltas() -> None:
    def h(count: float, low: float) -> Histogram:
        return Histogram(((0.1, low), (float("inf"), count)), count * 0.05, count)

    def m(count: float, low: float, positions: tuple[float, ...] | None) -> ServerMetrics:
        return ServerMetrics(
            itl_seconds=h(count, low), spec_accepted_per_position=positions, spec_drafts_total=count
        )

    sums = _run(
        [WorkerScrape(W1, m(10, 8, (5.0, 2.0))), WorkerScrape(W2, m(20, 10, None))],
        [WorkerScrape(W1, m(14, 11, (7.0, 3.0))), WorkerScrape(W2, m(3, 3, (1.0,)))],
    )  # fmt: skip
    itl = sums[1].metrics.itl_seconds
    assert itl is not None and itl.count == 30 + 4 + 3  # W2 restarted: its 3 since
    assert itl.buckets[0] == (0.1, 18 + 3 + 3)
    # W1 adds (2, 1); W2's family appeared since (llama.cpp writes it at the first draft): from 0.
    assert sums[1].metrics.spec_accepted_per_position == (5.0 + 2.0 + 1.0, 2.0 + 1.0)


def test_a_counter_a_worker_did_not_serve_before_counts_from_zero_not_from_unknown() -> None:
    sums = _run(
        [WorkerScrape(W1, ServerMetrics()), WorkerScrape(W2, ServerMetrics())],
        [WorkerScrape(W1, _m(10, 4)), WorkerScrape(W2, ServerMetrics())],
    )
    assert sums[0].metrics.generation_tokens_total is None
    assert sums[1].metrics.generation_tokens_total == 10


def test_a_worker_whose_counters_are_gone_restarted() -> None:
    sums = _run(
        [WorkerScrape(W1, _m(100, 40)), WorkerScrape(W2, _m(1000, 300))],
        [WorkerScrape(W1, _m(130, 50)), WorkerScrape(W2, ServerMetrics())],
        [WorkerScrape(W1, _m(160, 60)), WorkerScrape(W2, _m(20, 5))],
    )
    assert [w.reset for w in sums[1].metrics.workers] == [False, True]
    assert [s.metrics.generation_tokens_total for s in sums] == [1100, 1130, 1160 + 20]
