"""The human report of `specmon snapshots compare BASE SPEC`: one fact per line.

Every figure comes from `analysis` (pooled figures, the comparison, validity at the run's time);
the catalogued ones are written as the catalogue writes them (`analysis.catalogue`: their digits,
unit and sign), the rest with `specmon.wording`; missing ones render as "—", never 0.
"""

from __future__ import annotations

import json

from specmon.analysis.catalogue import Measured, figure
from specmon.analysis.comparison import compare
from specmon.analysis.pooled import pool
from specmon.analysis.validity import LifetimeCheck, Validity, snapshot_validity
from specmon.model import Snapshot
from specmon.reports.snapshot_table import format_time
from specmon.storage.serialize import summary_of
from specmon.wording import DASH, counted, describe_config, duration, verdict_text

DECODE, MS_PER_TOKEN = figure("decode tok/s"), figure("ms per token")
ACCEPT, CYCLE, SPEEDUP = figure("accept length"), figure("cycle"), figure("speedup")
BREAK_EVEN, MARGIN = figure("break-even accept length"), figure("margin")


def compare_text(
    base: Snapshot, spec: Snapshot, *, max_age_s: float, lifetime: LifetimeCheck
) -> str:
    """The report of `specmon snapshots compare BASE SPEC`, one fact per line.

    Says loudly when BASE is not a baseline (speculation on) and, line by line prefixed
    "STALE BASELINE:", every reason the baseline does not apply, "UNVERIFIED:" what could not be
    checked, "CONDITIONS DIFFER:" how the two ran under other conditions (the server's load, a
    starved client); then, prefixed "GPU WARNING:", every way the GPUs' condition differed
    between the two (clocks, power limit, throttling, other processes). The speedup, break-even
    and margin come from one `Comparison` of the pooled runs: "spec / base − 1" of the two
    decode figures printed above it.
    """
    lines = [_header("base", base), _header("spec", spec)]
    base_speculative = base.server.speculative is not None
    if base_speculative:
        lines.append(
            f"NOT A BASELINE: {_name(base)} ran with speculation on "
            f"({describe_config(base.server.speculative)}); take one with speculation off"
        )
    validity = snapshot_validity(base, spec, max_age_s=max_age_s, lifetime=lifetime)
    if validity.confirmed:
        gap = spec.created_at - base.created_at
        lines.append(f"baseline valid ✓ (taken {duration(gap)} before the run)")
    lines.extend(f"STALE BASELINE: {reason}" for reason in validity.reasons)
    lines.extend(f"UNVERIFIED: {what}" for what in validity.unverified)
    lines.extend(f"CONDITIONS DIFFER: {what}" for what in validity.conditions)
    lines.extend(f"GPU WARNING: {warning}" for warning in validity.warnings)
    spec_pooled = pool(spec.runs)
    comparison = compare(spec_pooled, pool(base.runs))
    measured = Measured(spec_pooled, comparison)
    speedup_line = DASH
    if comparison is not None:
        speedup_line = SPEEDUP.shown(measured)
        if comparison.speedup.low is not None:
            speedup_line += " (95% interval)"
        if not validity.valid:
            speedup_line += ": does not hold, stale baseline"
        elif not base_speculative:
            speedup_line += f": {verdict_text(comparison)}"
    lines.append(f"speedup         {speedup_line}")
    server_accept = summary_of(spec, "server_accept_length")
    accept_line = DASH
    if (accept := ACCEPT.written(measured)) is not None:
        accept_line = f"{accept} (client, pooled)"
        if server_accept is not None:
            accept_line += f"; server says {server_accept.median:.2f}"
    lines.append(f"accept length   {accept_line}")
    cycle = CYCLE.written(measured)
    lines.append(
        "cycle           "
        + (DASH if cycle is None else f"{cycle} {CYCLE.unit} per draft+verify (pooled)")
    )
    lines.append("break-even      " + _break_even_text(spec, measured, base_speculative))
    return "\n".join(lines) + "\n"


def compare_holds(base: Snapshot, spec: Snapshot, validity: Validity) -> bool:
    """Whether `snapshots compare` may exit 0: a real baseline that applies, confirmed."""
    return (
        base.server.speculative is None
        and spec.server.speculative is not None
        and (validity.confirmed)
    )


def _break_even_text(spec: Snapshot, measured: Measured, base_speculative: bool) -> str:
    """Break-even, and beside it the accept length measured and the margin between them."""
    if base_speculative:
        return f"{DASH} (BASE is not plain decoding)"
    if spec.server.speculative is None:
        return f"{DASH} (SPEC ran without speculation)"
    break_even = BREAK_EVEN.written(measured)
    if break_even is None:
        return DASH
    text = f"accept length {break_even}"
    accept, margin = ACCEPT.written(measured), MARGIN.written(measured)
    if margin is None or accept is None:
        return text
    return f"{text}; measured {accept}, margin {margin}"


def _name(snapshot: Snapshot) -> str:
    return "(unsaved)" if snapshot.id is None else f"#{snapshot.id}"


def _header(role: str, snapshot: Snapshot) -> str:
    """E.g. "spec  #4 EAGLE3 steps=2  2025-06-01T14:03:00Z "tuned"  decode 75.9 tok/s [...]"."""
    parts = [f"{role:<5} {_name(snapshot)}", describe_config(snapshot.server.speculative)]
    parts.append(snapshot.url)
    parts.append(format_time(snapshot.created_at))
    if snapshot.label:
        parts.append(json.dumps(snapshot.label, ensure_ascii=False))
    pooled = Measured(pool(snapshot.runs))
    decode = summary_of(snapshot, "decode_tok_s")
    if DECODE.get(pooled) is None or decode is None:
        parts.append(f"decode {DASH} {DECODE.unit}")
    else:
        runs = len(snapshot.runs)
        low, high = DECODE.format(decode.min), DECODE.format(decode.max)
        parts.append(
            f"decode {DECODE.shown(pooled)} [{low}–{high}] over {counted(runs, 'run')}"
            f" ({MS_PER_TOKEN.shown(pooled)})"
        )
    return "  ".join(parts)
