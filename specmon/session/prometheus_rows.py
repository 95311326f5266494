"""Fleet rows from specmon's exporter series as Prometheus holds them (`specmon --prometheus`).

The exporter serves each target's View (exporter/metrics.py): its probe figures, speedup with
its interval, the baseline's state, whether the target is up. A row here is those figures put
back in the units of `FleetRow` (the catalogue's `prometheus_scale`), its verdict the one
definition of it (`analysis.comparison.verdict` of the served interval), its baseline column
the state the exporter served. What the exporter does not serve (GPU readings, the drafting
now beside the flags, the reasons a baseline is stale) is shown as "—" and said, never guessed.

One instant query for the gauges (`FAMILIES`) and one per labelled family (`LABELLED`) read
every target's rows, and between two such readings one for the `STATE` gauges alone: the cost
does not grow per server beyond building rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from specmon.analysis.catalogue import CATALOGUE, Figure
from specmon.analysis.comparison import Speedup, Verdict, verdict
from specmon.analysis.validity import ValidityState
from specmon.config import FleetTarget
from specmon.model import server_title
from specmon.session.fleet_row import FleetRow, Rank, server_label
from specmon.sources.prometheus_api import Snapshot
from specmon.wording import DASH, SPECULATION_OFF

UP = "specmon_target_up"
PROBE_OK = "specmon_probe_success"
INFO = "specmon_target_info"
BASELINE_STATE = "specmon_baseline_state"
_BY_NAME = {f.prometheus: f for f in CATALOGUE if f.prometheus is not None}
DECODE = _BY_NAME["specmon_probe_decode_tokens_per_second"]
ACCEPT = _BY_NAME["specmon_probe_accept_length"]
CYCLE = _BY_NAME["specmon_probe_cycle_seconds"]
SPEEDUP = "specmon_speedup_ratio"
SPEEDUP_LOW = "specmon_speedup_ratio_low"
SPEEDUP_HIGH = "specmon_speedup_ratio_high"
FAMILIES = (
    UP,
    PROBE_OK,
    DECODE.prometheus or "",
    ACCEPT.prometheus or "",
    CYCLE.prometheus or "",
    SPEEDUP,
    SPEEDUP_LOW,
    SPEEDUP_HIGH,
)
"""The gauges an instant query reads, all in one query, by their `target` label."""
STATE = (UP, PROBE_OK)
"""The gauges read at every reading: whether each server is up and its probe succeeds. The
others (the probe's figures and the speedup change only when a probe ends, every 10 s by
default), the info and the baseline state are read every `prometheus_fleet.FIGURES_EVERY_S`."""
LABELLED = {
    INFO: ("name", "backend", "version", "algorithm", "speculation"),
    BASELINE_STATE: ("state",),
}
"""The families read with their other labels: what the server runs, the baseline's state."""
BASELINE_MARK = {
    ValidityState.VALID: "✓",
    ValidityState.UNVERIFIED: "? unverified",
    ValidityState.STALE: "✗ stale",
}
"""The baseline column of a served state, as `fleet_row` writes it."""
NOT_SERVED = "GPU readings and the drafting now are not in specmon's exporter series"
"""The line under the table for a row read through Prometheus."""
GONE = "Prometheus holds no series of it now (its exporter is not scraped, or dropped it)"


def prometheus_rows(snapshot: Snapshot, seen: Iterable[str] = ()) -> list[FleetRow]:
    """A row per target the snapshot names, and per one `seen` before that it no longer does
    (stale: said, not dropped)."""
    info = {s.labels.get("target", ""): s.labels for s in snapshot.labelled.get(INFO, [])}
    states: dict[str, str] = {}
    for sample in snapshot.labelled.get(BASELINE_STATE, []):
        if sample.value == 1.0:
            states[sample.labels.get("target", "")] = sample.labels.get("state", "")
    targets = snapshot.targets() | set(info)
    rows = [_row(t, snapshot, info.get(t, {}), states.get(t)) for t in sorted(targets) if t]
    rows += [_gone(t) for t in sorted(set(seen) - targets)]
    return rows


def _scaled(snapshot: Snapshot, figure: Figure, target: str) -> float | None:
    """A catalogue figure in its own unit (the exporter serves it times `prometheus_scale`)."""
    value = snapshot.value(figure.prometheus or "", target)
    return None if value is None else value / figure.prometheus_scale


def _row(target: str, snapshot: Snapshot, info: Mapping[str, str], state: str | None) -> FleetRow:
    up = snapshot.value(UP, target)
    algorithm = info.get("algorithm")
    speculative = None if not info else bool(algorithm)
    value = snapshot.value(SPEEDUP, target)
    speedup = (
        None
        if value is None
        else Speedup(
            value, snapshot.value(SPEEDUP_LOW, target), snapshot.value(SPEEDUP_HIGH, target)
        )
    )
    judged = verdict(speedup) if speedup is not None else None
    mark = BASELINE_MARK.get(ValidityState(state)) if state in set(ValidityState) else None
    rank, reason = _rank(up, snapshot.value(PROBE_OK, target), speculative, judged, state)
    name = info.get("name") or None
    return FleetRow(
        url=target,
        label=server_label(FleetTarget(target, name=name)),
        state="live" if up == 1.0 else "down" if up == 0.0 else "stale",
        reason=reason,
        title=server_title(info["backend"], info.get("version") or None)
        if info.get("backend")
        else None,
        speculation=info.get("speculation") or DASH,
        speculative=speculative,
        decode_tok_s=_scaled(snapshot, DECODE, target),
        accept_length=_scaled(snapshot, ACCEPT, target),
        cycle_ms=_scaled(snapshot, CYCLE, target),
        speedup=None if speculative is False or speedup is None else speedup.value,
        verdict=None if speculative is False else judged,
        baseline=DASH if speculative is False else (mark or "none"),
        baseline_valid=None if speculative is False or state is None else state != "stale",
        gpu=None,
        gpu_detail=NOT_SERVED,
        gpu_warn=False,
        rank=rank,
    )


def _rank(
    up: float | None,
    probe_ok: float | None,
    speculative: bool | None,
    judged: Verdict | None,
    state: str | None,
) -> tuple[Rank, str]:
    """`fleet_row`'s ranks, as far as the served series tell them."""
    if up == 0.0:
        return Rank.DOWN, "the exporter reads it down (its error is in the exporter's log)"
    if up is None:
        return Rank.STALE, "no specmon_target_up series: the exporter has not read it"
    if probe_ok == 0.0:
        return Rank.PROBE_FAILING, "probe failing (its error is in the exporter's log)"
    if speculative is not False and judged == Verdict.LOSING:
        return Rank.LOSING, "speculation is losing"
    if speculative is not False and state == ValidityState.STALE:
        return Rank.BASELINE_STALE, "baseline: stale (its reasons are on the server's dashboard)"
    if speculative is False:
        return Rank.NO_SPECULATION, SPECULATION_OFF
    if judged is None:
        why = "no baseline" if state is None else "no comparison served yet"
        return Rank.NO_COMPARISON, why
    if judged == Verdict.WITHIN_NOISE:
        return Rank.WITHIN_NOISE, "within noise"
    return Rank.WINNING, ""


def _gone(target: str) -> FleetRow:
    return FleetRow(
        url=target,
        label=server_label(FleetTarget(target)),
        state="stale",
        reason=GONE,
        title=None,
        speculation=DASH,
        speculative=None,
        decode_tok_s=None,
        accept_length=None,
        cycle_ms=None,
        speedup=None,
        verdict=None,
        baseline="none",
        baseline_valid=None,
        gpu=None,
        gpu_detail=NOT_SERVED,
        gpu_warn=False,
        rank=Rank.STALE,
    )
