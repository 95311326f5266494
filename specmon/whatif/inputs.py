"""What a what-if is fitted from: runs at one draft length, earlier snapshots of the same
configuration at other draft lengths, and the valid baseline (docs/metrics.md, "What-if").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specmon.analysis.acceptance import PositionAcceptance, draft_length, pooled_positions
from specmon.analysis.cycle_model import CycleFit, CyclePoint, drafts_without_model, fit_cycle
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.validity import fingerprint, protocol_differences
from specmon.model import (
    UNKNOWN_METHOD,
    Protocol,
    RunFigures,
    ServerInfo,
    Snapshot,
)
from specmon.whatif.prediction import WhatIf, what_if


@dataclass(frozen=True, slots=True)
class WhatIfAnswer:
    """A what-if, or why there is none."""

    result: WhatIf | None
    reason: str | None = None
    """Why `result` is None, one line."""


def is_tree(info: ServerInfo) -> bool:
    """Whether the server drafts a tree: a draft model with EAGLE topk > 1."""
    spec = info.speculative
    return (
        spec is not None
        and spec.eagle_topk is not None
        and spec.eagle_topk > 1
        and not drafts_without_model(spec.algorithm)
    )


def refusal(info: ServerInfo) -> str | None:
    """Why the what-if model does not apply to a server's speculation, or None if it does.

    It predicts chains of drafts (one candidate per position): a tree (EAGLE topk > 1) verifies
    several candidates per position, whose acceptance the per-position model does not describe.
    SGLang reports a `speculative_eagle_topk` for NGRAM too (10 in the 0.5.17 capture), which
    NGRAM does not use.
    """
    spec = info.speculative
    if spec is None:
        return "speculation is off: nothing to predict"
    if is_tree(info):
        return (
            f"EAGLE topk {spec.eagle_topk} drafts a tree: the what-if model covers chains "
            "(topk 1) only"
        )
    return None


NON_DRAFTING_SHARE = 0.02
"""Above this share of steps that drafted nothing, the drafter is a lookup (a draft model
drafts at every step, but at most a request's last)."""


def non_drafting_share(runs: Sequence[RunFigures]) -> float:
    """n₀: the share of the runs' steps that drafted nothing, 1 − Σ drafts / Σ steps.

    Only vLLM's and llama.cpp's counters and vLLM's per-request histogram tell drafting steps
    apart (`PositionSource.per_drafting_step`); SGLang's histogram counts every verify step, the
    first one included: 0 there.
    """
    counted = [
        r
        for r in runs
        if r.position_source
        and r.position_source.per_drafting_step
        and r.position_steps
        and r.decode_steps
    ]
    steps = sum(r.decode_steps or 0.0 for r in counted)
    if not steps:
        return 0.0
    return max(0.0, 1 - sum(r.position_steps or 0.0 for r in counted) / steps)


def _drafts_with_model(algorithm: str, non_drafting: float) -> bool:
    """Whether the server drafts with a model: by its algorithm's name, or, where the name is
    not exposed (vLLM outside dev mode: "unknown"), by whether (nearly) every step drafted."""
    if algorithm != UNKNOWN_METHOD:
        return not drafts_without_model(algorithm)
    return non_drafting <= NON_DRAFTING_SHARE


def runs_draft_length(info: ServerInfo, runs: Sequence[RunFigures]) -> int | None:
    """k as the server states it, else as many positions as the runs' acceptance covers
    (llama.cpp states it only through its per-position series, once a request has drafted)."""
    k = draft_length(info)
    if k is not None:
        return k
    positions = pooled_positions(runs)
    return len(positions.rates) if positions is not None else None


def earlier_points(
    info: ServerInfo, k_now: int, protocol: Protocol, earlier: Sequence[Snapshot]
) -> list[CyclePoint]:
    """Cycles of earlier snapshots of this configuration at other draft lengths.

    Same backend, algorithm, configuration apart from speculation (`fingerprint`) and protocol
    (the cycle grows with the context): only the draft length differs.
    """
    spec = info.speculative
    points = []
    for snapshot in earlier:
        other = snapshot.server
        k = runs_draft_length(other, snapshot.runs)
        if (
            spec is None
            or other.speculative is None
            or other.backend != info.backend
            or other.speculative.algorithm != spec.algorithm
            or k is None
            or k == k_now
            or fingerprint(other.args) != fingerprint(info.args)
            or protocol_differences(protocol, snapshot.protocol)
        ):
            continue
        cycle = pool(snapshot.runs).cycle_ms
        if cycle is not None:
            label = f"snapshot #{snapshot.id}" if snapshot.id is not None else "a snapshot"
            points.append(CyclePoint(k, cycle, label))
    return points


def predict(
    info: ServerInfo,
    protocol: Protocol,
    runs: Sequence[RunFigures],
    base: Pooled | None,
    earlier: Sequence[Snapshot] = (),
) -> WhatIfAnswer:
    """The what-if of runs at the server's draft length.

    Args:
        info: The server the runs were measured on.
        protocol: Their protocol (earlier snapshots count only under the same).
        runs: The runs.
        base: The valid baseline's pooled runs, or None (no speedup, and the cycle model falls
            back to its no-baseline case).
        earlier: Stored snapshots: those of this configuration at other draft lengths add
            points to the cycle model.
    """
    why = refusal(info)
    if why is not None:
        return WhatIfAnswer(None, why)
    assert info.speculative is not None
    now = pool(runs)
    positions = pooled_positions(runs)
    if positions is None or now.cycle_ms is None or now.accept_length is None:
        return WhatIfAnswer(None, "the runs measured no acceptance by draft position or no cycle")
    k = runs_draft_length(info, runs) or len(positions.rates)
    points = [CyclePoint(k, now.cycle_ms, "now"), *earlier_points(info, k, protocol, earlier)]
    return model_answer(info, now, positions, k, points, base, non_drafting_share(runs))


def model_answer(
    info: ServerInfo,
    now: Pooled,
    positions: PositionAcceptance,
    k: int,
    points: Sequence[CyclePoint],
    base: Pooled | None,
    n0: float,
    no_base: tuple[str, str] = (
        "no valid baseline to split the cycle into fixed and per-draft costs",
        "bench the server without speculation (a baseline) or at another draft length",
    ),
) -> WhatIfAnswer:
    """The what-if model fitted to figures measured at draft length k (the probes', or a load
    band's: `whatif.by_band`): the cycle through `points` (the current one first), then
    `what_if`; a server that drafts with a model and has one cycle and no baseline is not
    ranked.

    Args:
        info: The server (a speculative chain: `refusal` said None).
        now: The figures at k.
        positions: Acceptance by draft position.
        k: The draft length measured.
        points: Measured cycles, the current one first.
        base: The valid baseline's pooled runs, or None.
        n0: The share of steps that drafted nothing.
        no_base: Why there is no baseline, and what would give one: a draft model's one cycle
            is not ranked without it.
    """
    assert info.speculative is not None
    model_drafts = _drafts_with_model(info.speculative.algorithm, n0)
    cycle = fit_cycle(points, base.ms_per_token if base else None, model_drafts=model_drafts)
    if cycle is not None and model_drafts and cycle.fit == CycleFit.FIXED:
        # A draft model runs at every draft: taking its cost as the same at any k would make
        # longer drafts free, and rank them first.
        why, remedy = cycle.note or no_base[0], no_base[1]
        return WhatIfAnswer(
            None,
            f"other draft lengths are not ranked: one cycle measured with a draft model, and {why}"
            f"; {remedy}",
        )
    longest = max(p.draft_tokens for p in points)
    result = None
    if cycle is not None:
        result = what_if(now, positions, k, cycle, base, max(longest, k + 2), n0)
    if result is None:
        return WhatIfAnswer(None, "no prediction: the runs measured no accept length")
    return WhatIfAnswer(result)
