"""One row of the fleet table per server, taken from its View, and the order of the rows.

Nothing is computed here: every figure is the View's (`LiveState.view`: pooled probes, the
comparison, validity, the GPU verdict), so a row says what the single-server view says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from specmon.analysis.comparison import Verdict
from specmon.config import FleetTarget
from specmon.session.view import DraftingView, StateName, View
from specmon.wording import (
    FLEET_TAKE_BASELINE,
    SPECULATION_OFF,
    TAKE_BASELINE,
    drafting_short,
    partial_sums,
    validity_mark,
)


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
    NO_SPECULATION = 10
    """A plain server: nothing of speculation to look at."""


@dataclass(frozen=True, slots=True)
class FleetRow:
    """One server at one tick, as the fleet table shows it."""

    url: str
    label: str
    """The target's name, else its URL without "http://" (an https:// one keeps its scheme)."""
    state: StateName
    reason: str
    """Why it ranks where it does: the server's error, the probe's, the baseline's reasons;
    behind a router, the workers left out of its summed figures too."""
    title: str | None
    """"SGLang 0.5.23"; None before server info."""
    speculation: str
    """The spec config in a cell: "EAGLE3 2/1/3", "NGRAM d4", "no spec"."""
    speculative: bool | None
    """False on a plain server (no speedup to show); None before server info."""
    decode_tok_s: float | None
    """The recent probes' pooled decode tok/s: the window of its accept length, cycle and
    speedup (`RECENT_PROBES`), as the exporter's."""
    accept_length: float | None
    cycle_ms: float | None
    speedup: float | None
    """now / base − 1 of the comparison, whether or not its baseline applies (`baseline`);
    None on a plain server."""
    verdict: Verdict | None
    """The View's verdict (`SpecView.verdict`): only against a baseline that applies, as the
    dashboard, `check` and the exporter give one; None against a stale one."""
    baseline: str
    """"none", "✓", "? unverified", "? conditions differ" or "✗ stale" (the reasons are in
    `reason`); "—" on a plain server."""
    baseline_valid: bool | None
    gpu: str | None
    """The worst GPU in a few words ("8×H200 97% 71°C", "GPU 2 throttled"); None without
    readings."""
    gpu_detail: str | None
    """The GPUs in full, or why there are no readings (the line under the table)."""
    gpu_warn: bool
    rank: Rank
    draft_length: float | None = None
    """The effective draft length now (`DraftingView`); None while no step drafted."""
    duty_cycle: float | None = None
    """The share of decode steps that drafted now (`DraftingView`)."""
    drafting_differs: str | None = None
    """What the server drafts now when it is not its launch flags' k ("off", "k1.0"): an
    adaptive server at this load; the spec cell carries it."""


def server_label(target: FleetTarget) -> str:
    """What the server column shows: the target's name, else its URL without "http://" (the
    scheme says nothing then; https:// is kept: it is not the default)."""
    return target.name or target.url.removeprefix("http://").rstrip("/")


def fleet_row(label: str, view: View) -> FleetRow:
    """The row of one server's View (`label`: `server_label` of its target).

    A plain server has nothing to compare with a baseline: its speedup, verdict and validity
    are left out (the comparison of a server with itself is not a speedup of speculation).
    """
    identity, baseline, spec = view.identity, view.baseline, view.spec
    drafting = spec.drafting
    speculative = spec.enabled
    comparison = baseline.comparison  # none on a plain server (`BaselineView.comparison`)
    validity = baseline.validity
    present = baseline.present and speculative is not False
    mark = validity_mark(validity) if present else None
    short = {"✓": "✓", "?": mark.partition(":")[0], "✗": "✗ stale"}.get(mark[0]) if mark else None
    probe_failing = view.decode.probe_state.startswith("failing: ")
    rank, reason = _rank(view, probe_failing)
    # The table has no `b`: the server's dashboard does.
    reason = reason.replace(TAKE_BASELINE, FLEET_TAKE_BASELINE)
    partial = partial_sums(view.server.workers) if rank != Rank.DOWN else None
    if partial is not None:  # behind a router: whatever else it says, its sums lack a worker
        reason = f"{reason}; {partial}" if reason else partial
    return FleetRow(
        url=identity.url,
        label=label,
        state=identity.state,
        reason=reason,
        title=identity.title,
        speculation=identity.speculation_brief,
        speculative=speculative,
        decode_tok_s=view.decode.recent_tok_s,
        accept_length=spec.accept_length,
        cycle_ms=spec.cycle_ms,
        speedup=comparison.speedup.value if comparison else None,
        verdict=spec.verdict if comparison else None,
        baseline=short or ("—" if present or speculative is False else "none"),
        baseline_valid=validity.valid if validity is not None and present else None,
        gpu=view.gpus.worst,
        gpu_detail=view.gpus.summary or view.gpus.unavailable,
        gpu_warn=view.gpus.warn,
        rank=rank,
        draft_length=drafting.draft_length if drafting else None,
        duty_cycle=drafting.duty_cycle if drafting else None,
        drafting_differs=_drafting_differs(drafting),
    )


def _drafting_differs(drafting: DraftingView | None) -> str | None:
    """`drafting_short` of what runs now, when it is not the configured draft length."""
    if drafting is None or not drafting.differs:
        return None
    return drafting_short(drafting.draft_length, drafting.off)


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
    plain = view.spec.enabled is False  # no speedup to judge: its baseline is not the point
    comparison, validity = baseline.comparison, baseline.validity
    applies = validity is not None and validity.valid
    if not plain and applies and comparison is not None and comparison.verdict == Verdict.LOSING:
        return Rank.LOSING, "speculation is losing"
    if not plain and validity is not None and not validity.valid:
        return Rank.BASELINE_STALE, "baseline: " + "; ".join(validity.reasons)
    if view.gpus.warn:
        return Rank.GPU_WARNING, view.gpus.summary or ""
    if plain:  # the dashboard's reason: off, or not shown yet
        return Rank.NO_SPECULATION, dict(view.missing).get("accept length", SPECULATION_OFF)
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
