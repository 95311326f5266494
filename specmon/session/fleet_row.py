"""One row of the fleet table per server, taken from its View, and the order of the rows.

Nothing is computed here: every figure is the View's (`LiveState.view`: pooled probes, the
comparison, validity, the GPU verdict), so a row says what the single-server view says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from specmon.analysis.comparison import Verdict
from specmon.session.view import StateName, View
from specmon.wording import validity_mark


class Rank(IntEnum):
    """How badly a server needs a look: the fleet table sorts by it, worst first."""

    DOWN = 0
    CONNECTING = 1
    STALE = 2
    PROBE_FAILING = 3
    LOSING = 4
    BASELINE_STALE = 5
    GPU_WARNING = 6
    NO_COMPARISON = 7
    WITHIN_NOISE = 8
    WINNING = 9


@dataclass(frozen=True, slots=True)
class FleetRow:
    """One server at one tick, as the fleet table shows it."""

    url: str
    label: str
    state: StateName
    reason: str
    """Why it ranks where it does: the server's error, the probe's, the baseline's reasons."""
    title: str | None
    """"SGLang 0.5.23"; None before server info."""
    speculation: str
    decode_tok_s: float | None
    """The latest probe's decode tok/s (the single-server view's headline)."""
    accept_length: float | None
    cycle_ms: float | None
    speedup: float | None
    """now / base − 1 of the comparison, whether or not its baseline applies (`baseline`)."""
    verdict: Verdict | None
    baseline: str
    """"none", "✓", "? unverified" or "✗ stale" (the reasons are in `reason`)."""
    baseline_valid: bool | None
    gpu: str | None
    """The worst GPU in a few words, or why there are no GPU readings."""
    gpu_warn: bool
    rank: Rank


def fleet_row(label: str, view: View) -> FleetRow:
    """The row of one server's View."""
    identity, baseline, spec = view.identity, view.baseline, view.spec
    comparison = baseline.comparison
    validity = baseline.validity
    mark = validity_mark(validity) if baseline.present else None
    short = {"✓": "✓", "?": "? unverified", "✗": "✗ stale"}.get(mark[0]) if mark else None
    probe_failing = view.decode.probe_state.startswith("failing: ")
    rank, reason = _rank(view, probe_failing)
    return FleetRow(
        url=identity.url,
        label=label,
        state=identity.state,
        reason=reason,
        title=identity.title,
        speculation=identity.speculation,
        decode_tok_s=view.decode.decode_tok_s,
        accept_length=spec.accept_length,
        cycle_ms=spec.cycle_ms,
        speedup=comparison.speedup.value if comparison else None,
        verdict=comparison.verdict if comparison else None,
        baseline=short or ("—" if baseline.present else "none"),
        baseline_valid=validity.valid if validity is not None and baseline.present else None,
        gpu=view.gpus.worst or view.gpus.unavailable,
        gpu_warn=view.gpus.warn,
        rank=rank,
    )


def _rank(view: View, probe_failing: bool) -> tuple[Rank, str]:
    identity, baseline = view.identity, view.baseline
    if identity.state == "down":
        return Rank.DOWN, _without_url(identity.state_detail, identity.url) or "no answer"
    if identity.state == "connecting":
        return Rank.CONNECTING, "no answer yet"
    if identity.state == "stale":
        return Rank.STALE, identity.state_detail
    if probe_failing:
        return Rank.PROBE_FAILING, view.decode.probe_state
    comparison, validity = baseline.comparison, baseline.validity
    applies = validity is not None and validity.valid
    if applies and comparison is not None and comparison.verdict == Verdict.LOSING:
        return Rank.LOSING, "speculation is losing"
    if validity is not None and not validity.valid:
        return Rank.BASELINE_STALE, "baseline: " + "; ".join(validity.reasons)
    if view.gpus.warn:
        return Rank.GPU_WARNING, view.gpus.summary or ""
    if comparison is None:
        why = dict(view.missing).get("speedup", "no comparison yet")
        return Rank.NO_COMPARISON, why
    if comparison.verdict == Verdict.WITHIN_NOISE:
        return Rank.WITHIN_NOISE, "within noise"
    return Rank.WINNING, ""


def worst_first(rows: Iterable[FleetRow]) -> list[FleetRow]:
    """Rows by rank, then by speedup (lowest first; none last), then by label."""
    return sorted(
        rows,
        key=lambda r: (r.rank, r.speedup if r.speedup is not None else float("inf"), r.label),
    )


def _without_url(error: str, url: str) -> str:
    """ "connection refused (…)" of "http://host:8000/server_info: connection refused (…)": the
    row names the server already."""
    if error.startswith(url):
        _, sep, rest = error.partition(": ")
        return rest if sep else error
    return error
