"""Figures that cannot be true are never shown (issue 35 §6): an accept length above k + 1 is
withheld, with why, on the View every surface reads (dashboard, fleet, exporter, `--once`)."""

from __future__ import annotations

from types import MappingProxyType

from factories import server_info

from specmon.analysis.acceptance import draft_length, impossible_accept_length
from specmon.analysis.figures import run_figures
from specmon.model import ProbeChunk, ProbeResult, Protocol, Reading, Sample
from specmon.session.live import LiveState


def _probe(tokens_per_step: int, steps: int = 20) -> ProbeResult:
    """A probe whose chunks are its verify steps, `tokens_per_step` tokens each, 20 ms apart."""
    chunks = [ProbeChunk(0.05 + 0.02 * i, 1 + tokens_per_step * i) for i in range(steps + 1)]
    return ProbeResult(0.0, tuple(chunks), 10, steps, None, "length")


def test_the_bound_is_k_plus_one_and_says_why() -> None:
    assert impossible_accept_length(4.0, 3) is None  # every draft accepted: possible
    assert impossible_accept_length(None, 3) is None
    assert impossible_accept_length(31.4, None) is None  # nothing bounds it
    why = impossible_accept_length(8.69, 3)
    assert why is not None and "8.69" in why and "k + 1 = 4" in why


def test_an_accept_length_above_k_plus_one_is_withheld_with_why() -> None:
    info = server_info()
    assert draft_length(info) == 3  # the fixture's NGRAM draft=4 counts the root
    live = LiveState("http://h:1", Protocol(5, 0, 256, 0.0, "p"), max_age_s=1800, probe_every=10)
    readings = {"info": Reading(info, 1.0, 1, None, None), "metrics": Reading(None, None, 1)}
    live.on_sample(Sample(1.0, 1001.0, MappingProxyType(readings)))
    # Verify steps uncounted while an adaptive server drafted nothing: 9 tokens a "step".
    result = _probe(9)
    live.on_probe(1001.0, 1.0, run_figures(result), result)
    view = live.view(1002.0, 3)
    assert view.spec.accept_length is None
    assert "cannot be: at most k + 1 = 4" in dict(view.missing)["accept length"]
    # A possible one is shown as is.
    fresh = LiveState("http://h:1", Protocol(5, 0, 256, 0.0, "p"), max_age_s=1800, probe_every=10)
    fresh.on_sample(Sample(1.0, 1001.0, MappingProxyType(readings)))
    result = _probe(3)
    fresh.on_probe(1001.0, 1.0, run_figures(result), result)
    assert fresh.view(1002.0, 3).spec.accept_length == 3.0
