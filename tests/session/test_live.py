"""LiveState: restarts, config changes, outages and baseline validity, from samples alone."""

from __future__ import annotations

import statistics
from dataclasses import replace
from types import MappingProxyType

import pytest
from factories import PROTOCOL, a_snapshot, sample, server_info, server_metrics

from specmon.analysis.figures import run_figures
from specmon.analysis.stats import percentile
from specmon.analysis.validity import LifetimeState, Validity, lifetime_of
from specmon.model import (
    ProbeChunk,
    ProbeResult,
    Reading,
    Sample,
    ServerInfo,
    SpecConfig,
)
from specmon.session.baselines import BaselineOrigin
from specmon.session.live import LiveState
from specmon.wording import SPECULATION_NOT_SHOWN


def _live() -> LiveState:
    return LiveState("http://h:1", PROTOCOL, max_age_s=1800, probe_every=10)


def test_counters_going_down_is_a_restart() -> None:
    live = _live()
    live.on_sample(
        sample(1, info=server_info("plain"), metrics=server_metrics("plain/metrics_after"), seq=1)
    )
    live.on_sample(
        sample(
            2,
            info=server_info("plain"),
            metrics=server_metrics("plain_metrics_after_restart.txt"),
            seq=2,
        )
    )
    texts = [e.text for e in live.events]
    assert "server restarted: its counters went down" in texts


def test_speculation_change_and_flag_change_are_events() -> None:
    live = _live()
    live.on_sample(sample(1, info=server_info("spec"), metrics=None, seq=1))
    live.on_sample(sample(2, info=server_info("plain"), metrics=None, seq=2))
    live.on_sample(
        sample(3, info=server_info("plain", mem_fraction_static=0.5), metrics=None, seq=3)
    )
    texts = [e.text for e in live.events]
    assert "server restarted: speculation changed: NGRAM steps=0 topk=10 draft=4 → off" in texts
    assert "server restarted: flags changed: mem_fraction_static" in texts


def test_speculation_shown_late_is_the_same_launch() -> None:
    """TensorRT-LLM's speculation shows with its first finished request (its per-position
    counters): off turning on, its args the same, is no restart; on turning off still is."""
    plain = replace(server_info("plain"), backend="trtllm", args=MappingProxyType({"model": "m"}))
    spec = replace(plain, speculative=SpecConfig("unknown", 4, None, None, None, "max_draft_len"))
    live = _live()
    for t, info in enumerate((plain, spec, spec, plain), start=1):
        live.on_sample(sample(t, info=info, metrics=None, seq=t))
    texts = [e.text for e in live.events]
    assert not any("→ method not exposed" in text for text in texts)
    fresh = _live()
    fresh.on_sample(sample(1, info=plain, metrics=None, seq=1))
    assert dict(fresh.view(1.0, 10.0).missing)["accept length"] == SPECULATION_NOT_SHOWN
    assert (
        "server restarted: speculation changed: method not exposed, max_draft_len=4 → off" in texts
    )


def test_outage_then_return_is_a_restart_and_state_goes_down_then_live() -> None:
    live = _live()
    live.on_sample(sample(1, info=server_info(), metrics=server_metrics("spec/metrics"), seq=1))
    assert live.view(1001, 3).identity.state == "live"
    live.on_sample(
        sample(
            5, info=server_info(), metrics=server_metrics("spec/metrics"), seq=1, error="refused"
        )
    )
    view = live.view(1005, 3)
    assert view.identity.state == "down"
    assert view.identity.state_detail == "refused"
    live.on_sample(
        sample(9, info=server_info(), metrics=server_metrics("spec/metrics_after"), seq=2)
    )
    assert live.view(1009, 3).identity.state == "live"
    assert any("back after an outage" in e.text for e in live.events)


def test_no_baseline_says_how_to_get_one() -> None:
    live = _live()
    live.on_sample(sample(1, info=server_info(), metrics=None, seq=1))
    view = live.view(1001, 3)
    assert not view.baseline.present
    assert ("speedup", "no baseline yet — press b") in view.missing


def _watching_a_baseline_server() -> tuple[LiveState, ServerInfo]:
    """A speculative server whose baseline came from a plain server, read once since the bench:
    the state, and the plain server's info."""
    live = _live()
    plain = server_info("plain")
    at_bench = lifetime_of(plain, server_metrics("plain/metrics"))
    baseline = a_snapshot(server=plain, id=7, lifetime=at_bench)
    live.set_baseline(1000, baseline, BaselineOrigin.BASELINE_SERVER)
    live.on_sample(sample(1, info=server_info("spec"), metrics=None, seq=1))
    live.on_baseline_sample(
        sample(1, info=plain, metrics=server_metrics("plain/metrics_after"), seq=1)
    )
    return live, plain


def test_baseline_server_restart_invalidates_once() -> None:
    live, plain = _watching_a_baseline_server()
    assert live.baseline.lifetime(live.server.info).state == LifetimeState.SAME
    assert live.view(1001, 3).baseline.validity == Validity((), (), ())
    live.on_baseline_sample(
        sample(2, info=plain, metrics=server_metrics("plain_metrics_after_restart.txt"), seq=2)
    )
    assert live.baseline.lifetime(live.server.info).state == LifetimeState.RESTARTED
    live.on_baseline_sample(
        sample(3, info=plain, metrics=server_metrics("plain/metrics_after"), seq=3)
    )
    assert live.baseline.lifetime(live.server.info).state == LifetimeState.RESTARTED  # it stays
    texts = [e.text for e in live.events]
    assert sum("the baseline no longer applies" in t for t in texts) == 1
    validity = live.view(1003, 3).baseline.validity
    assert validity is not None and not validity.valid
    assert "restarted" in validity.reasons[0]


def test_a_baseline_server_that_went_down_is_unverified_then_restarted() -> None:
    """Its last answers say nothing of it since it went down: unverified, as `check` says when
    it cannot read it (not ✓ from the kept answers); back up, it counts as restarted."""
    live, plain = _watching_a_baseline_server()
    assert live.view(1001, 3).baseline.validity == Validity((), (), ())
    live.on_baseline_sample(
        sample(2, info=plain, metrics=server_metrics("plain/metrics_after"), seq=1, error="refused")
    )
    validity = live.view(1002, 3).baseline.validity
    assert validity is not None and validity.valid and not validity.confirmed
    assert validity.unverified == ("the baseline server cannot be read: refused",)
    live.on_baseline_sample(
        sample(3, info=plain, metrics=server_metrics("plain/metrics_after"), seq=2)
    )
    validity = live.view(1003, 3).baseline.validity
    assert validity is not None and not validity.valid
    assert "restarted" in validity.reasons[0]


def test_a_baseline_taken_here_survives_the_relaunch_with_speculation() -> None:
    live = _live()
    plain = server_info("plain")
    live.on_sample(sample(1, info=plain, metrics=server_metrics("plain/metrics_after"), seq=1))
    live.set_baseline(
        1001,
        a_snapshot(
            created_at=1001,
            url="http://h:1",
            server=plain,
            id=8,
            lifetime=lifetime_of(plain, server_metrics("plain/metrics")),
        ),
        BaselineOrigin.THIS_SERVER,
    )
    # The metrics of the new launch come before its server info: a restart, for a moment,
    # whose launch is not known yet: unverified on every surface, not stale (issue 25).
    after = sample(2, info=plain, metrics=server_metrics("plain_metrics_after_restart.txt"), seq=2)
    old_info = MappingProxyType({**after.readings, "info": Reading(plain, 1, 1)})
    live.on_sample(replace(after, readings=old_info))  # the info read before the restart
    moment = live.view(1002, 3).baseline.validity
    assert moment is not None and moment.valid and moment.unverified
    live.on_sample(
        sample(7, info=server_info("spec"), metrics=server_metrics("spec/metrics"), seq=3)
    )
    lifetime = live.baseline.lifetime(live.server.info)
    assert lifetime.state == LifetimeState.RELAUNCHED
    validity = live.view(1007, 3).baseline.validity
    assert validity is not None and validity.confirmed
    # The events log says what the panel says (issue 25): no "no longer applies" for that moment.
    assert not [e.text for e in live.events if "no longer applies" in e.text]
    # Relaunched plain again, it is another lifetime than the baseline's: said once, as shown.
    live.on_sample(
        sample(9, info=plain, metrics=server_metrics("plain_metrics_after_restart.txt"), seq=4)
    )
    assert live.baseline.lifetime(live.server.info).state == LifetimeState.RESTARTED
    assert len([e for e in live.events if "the baseline no longer applies" in e.text]) == 1


def test_validity_without_a_probe() -> None:
    live = _live()
    live.probe_enabled = False
    old = a_snapshot(created_at=0, url="http://h:1", server=server_info("plain", tp_size=2), id=9)
    live.set_baseline(0, old, BaselineOrigin.STORE)
    live.on_sample(sample(1, info=server_info("spec"), metrics=None, seq=1))
    validity = live.view(5 * 3600, 3).baseline.validity
    assert validity is not None
    assert validity.reasons == ("flags differ: tp_size", "too old (5.0 h > 30 min)")


def test_a_server_that_stopped_generating_is_idle_whatever_its_gauges_say() -> None:
    """SGLang refreshes `num_running_reqs` only while it decodes: an idle server keeps it at 1."""
    live = _live()
    busy = replace(server_metrics("spec/metrics_after"), num_running_reqs=1.0)
    live.on_sample(sample(1, info=server_info(), metrics=server_metrics("spec/metrics"), seq=1))
    live.on_sample(sample(2, info=server_info(), metrics=busy, seq=2))
    server = live.view(1002, 3).server
    assert not server.idle and not server.running_stale and server.decode_tok_s
    live.on_sample(
        sample(14, info=server_info(), metrics=busy, seq=3)
    )  # no token over the last 10 s
    server = live.view(1014, 3).server
    assert server.idle and server.running_stale and server.running == 1.0
    assert server.rate_span_s == 10.0


def test_without_a_token_counter_idleness_is_not_guessed() -> None:
    live = _live()
    bare = replace(
        server_metrics("spec/metrics_after"),
        num_running_reqs=1.0,
        realtime_decode_tokens_total=None,
        generation_tokens_total=None,
    )
    live.on_sample(sample(1, info=server_info(), metrics=bare, seq=1))
    live.on_sample(sample(14, info=server_info(), metrics=bare, seq=2))
    server = live.view(1014, 3).server
    assert not server.idle and not server.running_stale


def _probe(gaps_ms: list[float]) -> ProbeResult:
    """A speculative probe whose chunks are its verify steps, two tokens each, `gaps_ms` apart."""
    chunks, t = [ProbeChunk(0.05, 1)], 0.05
    for i, gap in enumerate(gaps_ms):
        t += gap / 1000
        chunks.append(ProbeChunk(t, 1 + 2 * (i + 1)))
    return ProbeResult(0.0, tuple(chunks), 10, len(gaps_ms), None, "length")


def test_cycle_percentiles_are_of_the_pooled_steps_and_tok_s_of_the_pooled_window() -> None:
    """Issue 24 §6: the p95 is over every step of the recent probes, not the median of each
    probe's p95; the pooled decode tok/s is the window of the accept, cycle and speedup."""
    live = _live()
    live.on_sample(sample(1, info=server_info("spec"), metrics=None, seq=1))
    slow = [20.0] * 19 + [90.0]  # one step in 20 at 90 ms: its own p95 is 23.5 ms
    probes = [_probe(slow), _probe(slow), _probe([20.0] * 20)]
    for k, result in enumerate(probes):
        live.on_probe(1000.0 + k, float(k), run_figures(result), result)
    spec = live.view(1003, 3).spec
    steps = [20.0] * 58 + [90.0] * 2
    assert spec.cycle_ms_p95 == pytest.approx(percentile(steps, 95)) == pytest.approx(20.0)
    before = statistics.median(run_figures(r).cycle_ms_p95 or 0 for r in probes)
    assert before == pytest.approx(23.5)  # the median of per-probe p95s: no p95 of the steps
    decode = live.view(1003, 3).decode
    assert decode.recent_runs == 3
    assert decode.recent_tok_s == pytest.approx(live.recent().decode_tok_s)
    assert decode.recent_tok_s != decode.decode_tok_s  # the latest probe alone is faster


def test_a_server_with_metrics_off_stays_live_between_server_info_reads() -> None:
    # With /metrics off, server info (read every INFO_EVERY_S = 5 s) is the only fresh answer:
    # at 3 s stale_after it flapped live → stale → live every 5 s (the exporter's target_up too).
    live = _live()
    info = server_info()
    off = "http://h:1/metrics: 404 — metrics are off"
    readings = {"info": Reading(info, 0.0, 1), "metrics": Reading(None, None, 0, off, 0.0)}

    def state_at(t: float) -> str:
        live.on_sample(Sample(t, 1000.0 + t, MappingProxyType(readings)))
        return live.view(1000.0 + t, stale_after=3.0).identity.state

    assert [state_at(t) for t in (1.0, 4.0, 5.0)] == ["live", "live", "live"]
    assert state_at(9.0) == "stale"  # a missed info read and then some: no answer for 9 s
