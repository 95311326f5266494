"""The human report of `specmon snapshots compare BASE SPEC`: one fact per line.

Every figure comes from `analysis` (pooled figures, the comparison, validity at the run's time),
written with `specmon.wording`; missing ones render as "—", never 0.
"""

from __future__ import annotations

import json

from specmon.analysis.comparison import Comparison, compare
from specmon.analysis.pooled import pool
from specmon.analysis.validity import LifetimeCheck, Validity, snapshot_validity
from specmon.model import Snapshot
from specmon.reports.snapshot_table import format_time
from specmon.storage.serialize import summary_of
from specmon.wording import DASH, counted, describe_config, duration, speedup_text, verdict_text


def compare_text(
    base: Snapshot, spec: Snapshot, *, max_age_s: float, lifetime: LifetimeCheck
) -> str:
    """The report of `specmon snapshots compare BASE SPEC`, one fact per line.

    Says loudly when BASE is not a baseline (speculation on) and, line by line prefixed
    "STALE BASELINE:", every reason the baseline does not apply, "UNVERIFIED:" what could not be
    checked; then, prefixed "GPU WARNING:", every way the GPUs' condition differed between the
    two (clocks, power limit, throttling, other processes). The speedup, break-even and margin
    come from one `Comparison` of the pooled runs: "spec / base − 1" of the two decode figures
    printed above it.
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
    lines.extend(f"GPU WARNING: {warning}" for warning in validity.warnings)
    spec_pooled = pool(spec.runs)
    comparison = compare(spec_pooled, pool(base.runs))
    speedup_line = DASH
    if comparison is not None:
        speedup_line = speedup_text(comparison.speedup) or DASH
        if comparison.speedup.low is not None:
            speedup_line += " (95% interval)"
        if not validity.valid:
            speedup_line += ": does not hold, stale baseline"
        elif not base_speculative:
            speedup_line += f": {verdict_text(comparison)}"
    lines.append(f"speedup         {speedup_line}")
    server_accept = summary_of(spec, "server_accept_length")
    accept_line = DASH
    if spec_pooled.accept_length is not None:
        accept_line = f"{spec_pooled.accept_length:.2f} (client, pooled)"
        if server_accept is not None:
            accept_line += f"; server says {server_accept.median:.2f}"
    lines.append(f"accept length   {accept_line}")
    cycle = spec_pooled.cycle_ms
    lines.append(
        "cycle           "
        + (DASH if cycle is None else f"{cycle:.1f} ms per draft+verify (pooled)")
    )
    lines.append("break-even      " + _break_even_text(spec, comparison, base_speculative))
    return "\n".join(lines) + "\n"


def compare_holds(base: Snapshot, spec: Snapshot, validity: Validity) -> bool:
    """Whether `snapshots compare` may exit 0: a real baseline that applies, confirmed."""
    return (
        base.server.speculative is None
        and spec.server.speculative is not None
        and (validity.confirmed)
    )


def _break_even_text(spec: Snapshot, comparison: Comparison | None, base_speculative: bool) -> str:
    if base_speculative:
        return f"{DASH} (BASE is not plain decoding)"
    if spec.server.speculative is None:
        return f"{DASH} (SPEC ran without speculation)"
    if comparison is None or comparison.break_even is None:
        return DASH
    text = f"accept length {comparison.break_even:.2f}"
    if comparison.margin is None or comparison.accept_length is None:
        return text
    return f"{text}; measured {comparison.accept_length:.2f}, margin {comparison.margin:+.2f}"


def _name(snapshot: Snapshot) -> str:
    return "(unsaved)" if snapshot.id is None else f"#{snapshot.id}"


def _header(role: str, snapshot: Snapshot) -> str:
    """E.g. "spec  #4 EAGLE3 steps=2  2025-06-01T14:03:00Z "tuned"  decode 75.9 tok/s [...]"."""
    parts = [f"{role:<5} {_name(snapshot)}", describe_config(snapshot.server.speculative)]
    parts.append(snapshot.url)
    parts.append(format_time(snapshot.created_at))
    if snapshot.label:
        parts.append(json.dumps(snapshot.label, ensure_ascii=False))
    pooled = pool(snapshot.runs)
    decode = summary_of(snapshot, "decode_tok_s")
    if pooled.decode_tok_s is None or decode is None:
        parts.append(f"decode {DASH} tok/s")
    else:
        runs = len(snapshot.runs)
        parts.append(
            f"decode {pooled.decode_tok_s:.1f} tok/s [{decode.min:.1f}–{decode.max:.1f}]"
            f" over {counted(runs, 'run')}"
            f" ({pooled.ms_per_token:.1f} ms/token)"
        )
    return "  ".join(parts)
