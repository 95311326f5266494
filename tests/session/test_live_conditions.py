"""The dashboard's state when its probes run beside other requests (a second specmon on the same
server): the events log says so at the first such probe, the Baseline panel is no clean ✓ and
names what differs, and both clear once the probes run alone again."""

from __future__ import annotations

from dataclasses import replace

from factories import PROTOCOL, sample, server_info, server_metrics

from specmon.analysis.figures import run_figures
from specmon.analysis.validity import ValidityState, lifetime_of
from specmon.model import (
    ProbeChunk,
    ProbeResult,
    RunConditions,
    Snapshot,
)
from specmon.session.baselines import BaselineOrigin
from specmon.session.live import RECENT_PROBES, LiveState
from specmon.ui.widgets.baseline_panel import _body
from specmon.wording import validity_mark

ALONE = RunConditions(others_running=0, queued=0, load_readings=5)
BESIDE = RunConditions(others_running=1, queued=0, load_readings=5)


def _probe(conditions: RunConditions) -> ProbeResult:
    """A speculative probe of 128 steps, two tokens each, 27.6 ms apart."""
    chunks = tuple(ProbeChunk(0.05 + 0.0276 * i, 1 + 2 * i) for i in range(129))
    return ProbeResult(0.0, chunks, 10, 129, None, "length", conditions=conditions)


def _live_with_a_baseline_taken_alone() -> LiveState:
    live = LiveState("http://h:1", PROTOCOL, max_age_s=1800, probe_every=10)
    run = replace(run_figures(_probe(ALONE)), accept_length=None, conditions=ALONE)
    plain = server_info("plain")
    at_bench = lifetime_of(plain, server_metrics("plain/metrics"))
    baseline = Snapshot(
        1000.0, "http://b:2", None, plain, PROTOCOL, (run,) * 5, id=7, lifetime=at_bench
    )
    live.set_baseline(1000.0, baseline, BaselineOrigin.BASELINE_SERVER)
    live.on_sample(sample(1, info=server_info("spec"), metrics=None))
    live.on_baseline_sample(sample(1, info=plain, metrics=server_metrics("plain/metrics_after")))
    return live


def _on_probe(live: LiveState, t: float, conditions: RunConditions) -> None:
    result = _probe(conditions)
    live.on_probe(1000.0 + t, t, run_figures(result), result)


def test_a_second_specmon_is_said_at_the_first_probe_beside_it_then_cleared() -> None:
    live = _live_with_a_baseline_taken_alone()
    _on_probe(live, 2, ALONE)
    validity = live.view(1003.0, 3).baseline.validity
    assert validity is not None and validity.confirmed
    _on_probe(live, 12, BESIDE)  # the second specmon's probe overlapped this one
    texts = [e.text for e in live.events]
    assert any(t.startswith("the probe ran beside 1 other request: another client") for t in texts)
    view = live.view(1013.0, 3).baseline
    assert view.validity is not None
    assert view.validity.state == ValidityState.UNVERIFIED
    said = "the probe ran beside 1 other request (1 of 2 runs); the baseline ran alone"
    assert view.validity.conditions == (said,)
    assert validity_mark(view.validity) == f"? conditions differ: {said}"
    body = _body(view, 60, 24)
    assert "? conditions differ" in body and "✓ valid" not in body
    assert "≠" in body and "the baseline ran alone" in body
    # Alone again: the events log says so once; the flag clears once no recent probe ran beside.
    for i in range(RECENT_PROBES):
        _on_probe(live, 22 + 10 * i, ALONE)
    texts = [e.text for e in live.events]
    assert texts.count("the probe ran alone again: no other request beside it") == 1
    validity = live.view(1100.0, 3).baseline.validity
    assert validity is not None and validity.confirmed


def test_probes_whose_load_is_unknown_leave_a_clean_tick() -> None:
    live = _live_with_a_baseline_taken_alone()
    _on_probe(live, 2, RunConditions())  # metrics off: no reading
    validity = live.view(1003.0, 3).baseline.validity
    assert validity is not None and validity.confirmed
    assert not any("beside" in e.text for e in live.events)
