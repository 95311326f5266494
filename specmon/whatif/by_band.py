"""The what-if of one load band: the same model as the probes' (`inputs.model_answer`),
fitted to that band's own figures from the server's /metrics (docs/metrics.md, "By load").

A band's figures are per request at that load: tokens per step overall
AL = d·AL_d + (1 − d) (d the duty cycle, AL_d tokens per drafting step; a step that drafts
nothing yields one token), its cycle 1000·AL / per-request tok/s, and n₀ = 1 − d the steps that
drafted nothing. The shape of acceptance by position comes from the probes (the server's
counters give no per-position figures by load); its level is the band's own accept length.
The baseline is the stored A/B's plain side at streams in the band, where exactly one level
falls there; else the screen's valid baseline, in the band of the streams it was benched at
(one: band 1), so the screen has one baseline (its `T₀`) wherever it applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from specmon.analysis.acceptance import PositionAcceptance
from specmon.analysis.by_load import LoadBand, band_label, band_of, levels_in_band
from specmon.analysis.cycle_model import CyclePoint
from specmon.analysis.load import Level
from specmon.analysis.pooled import Pooled
from specmon.model import ServerInfo
from specmon.whatif.inputs import WhatIfAnswer, model_answer, refusal


@dataclass(frozen=True, slots=True)
class BandWhatIf:
    """A load band and what other draft lengths would do there."""

    band: LoadBand
    answer: WhatIfAnswer


def band_what_if(
    info: ServerInfo,
    band: LoadBand,
    positions: PositionAcceptance | None,
    ab_levels: tuple[Level, ...] = (),
    baseline: Pooled | None = None,
    baseline_streams: int = 1,
) -> BandWhatIf:
    """The what-if of one band from its own acceptance and cycle (module docstring).

    Args:
        info: The server.
        band: The band's figures.
        positions: The recent probes' acceptance by position, or None.
        ab_levels: The stored A/B's levels.
        baseline: The screen's valid baseline (pooled), or None.
        baseline_streams: The streams it was benched at.
    """
    why = refusal(info)
    if why is not None:
        return BandWhatIf(band, WhatIfAnswer(None, why))
    d, al_d, per_request = band.duty_cycle, band.accept_length, band.per_request_tok_s
    if band.off or d is None or al_d is None or band.draft_length is None:
        return BandWhatIf(band, WhatIfAnswer(None, "no drafting at this load to predict from"))
    if positions is None:
        return BandWhatIf(band, WhatIfAnswer(None, "no probe's acceptance by position yet"))
    if not per_request:
        return BandWhatIf(band, WhatIfAnswer(None, "no decode rate at this load"))
    tokens = d * al_d + (1 - d)
    cycle_ms = 1000 * tokens / per_request
    k = max(1, round(band.draft_length))
    now = Pooled(1, per_request, None, tokens, cycle_ms)
    bases = [lv.baseline for lv in levels_in_band(ab_levels, band.start)]
    base = bases[0] if len(bases) == 1 else None  # several levels in a band: none is its own
    if base is None and not bases and band_of(baseline_streams) == band.start:
        base = baseline
    streams = f"{baseline_streams} stream{'s' if baseline_streams != 1 else ''}"
    no_ab = f"no stored A/B at {band_label(band.start)} running"
    why = (
        f"no baseline at this load (the baseline's is {streams}; {no_ab})"
        if baseline is not None
        else f"no valid baseline and {no_ab}"
    )
    no_base = (why, "an A/B (`specmon ab`) at this load gives one")
    point = CyclePoint(k, cycle_ms, f"running {band.start}")
    answer = model_answer(info, now, positions, k, [point], base, 1 - d, no_base)
    return BandWhatIf(band, answer)
