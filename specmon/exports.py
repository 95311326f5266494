"""Stored snapshots side by side: comparison rows, their export (Markdown, CSV, JSON), and the
human report of `specmon snapshots compare BASE SPEC`.

Every derived figure comes from `analysis` (pooled figures, the comparison, validity); this
module only pairs snapshots and formats, with `specmon.wording`. Missing figures stay None and
render as "—" (Markdown and text), an empty cell (CSV) or null (JSON), never 0.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from specmon.analysis.comparison import Comparison, compare
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.validity import (
    LifetimeCheck,
    LifetimeState,
    Validity,
    fingerprint,
    protocol_differences,
    relaunched_for_speculation,
    snapshot_validity,
)
from specmon.model import Snapshot
from specmon.serialize import summary_of
from specmon.wording import (
    DASH,
    describe_config,
    duration,
    speedup_text,
    validity_mark,
    verdict_text,
)

ExportFormat = Literal["md", "csv", "json"]
NOT_CHECKED = LifetimeCheck(LifetimeState.UNVERIFIED, "the baseline server was not checked")


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """One snapshot's figures, and for a speculative one its comparison with a baseline."""

    id: int | None
    url: str
    created_at: float
    label: str | None
    config: str
    """`SpecConfig.describe()`, or "no speculation"."""
    speculative: bool
    pooled: Pooled
    """Decode tok/s, accept length and cycle: the one statistic (analysis/pooled.py)."""
    decode_tok_s_min: float | None
    decode_tok_s_max: float | None
    baseline_id: int | None = None
    """The matched baseline (speculative rows only)."""
    baseline_url: str | None = None
    comparison: Comparison | None = None
    validity: Validity | None = None
    """Whether the matched baseline applied; None when there is none."""
    no_baseline: str | None = None
    """Why a speculative row has no baseline."""

    @property
    def baseline_note(self) -> str | None:
        """ "✓", "? unverified: …", "✗ reason; …", why there is no baseline, or None (a
        baseline's own row)."""
        return validity_mark(self.validity) or self.no_baseline


def lifetime_for(
    base: Snapshot, spec: Snapshot, checked: Mapping[int, LifetimeCheck]
) -> LifetimeCheck:
    """The baseline server's lifetime as it bears on `spec`: by design relaunched when both were
    taken at one address, else what the session found (`checked`, by baseline id)."""
    if base.url == spec.url and spec.server.speculative is not None:
        return relaunched_for_speculation()
    return checked.get(base.id, NOT_CHECKED) if base.id is not None else NOT_CHECKED


NO_BASELINE = "no baseline of its configuration was taken before it"


def match_baseline(spec: Snapshot, candidates: Sequence[Snapshot]) -> Snapshot | None:
    """The baseline of a speculative snapshot: a plain snapshot of any server with the same
    fingerprint taken before it, the latest with its protocol first, then the latest.

    So it is the one that applied when the run was taken if any did (for `ab`, the run's own
    round's); else its validity says why none did. None when none was taken before it: a later
    baseline is another launch, never its baseline.
    """
    key = fingerprint(spec.server.args)
    earlier = [
        c
        for c in candidates
        if c.server.speculative is None
        and c.created_at <= spec.created_at
        and fingerprint(c.server.args) == key
    ]
    if not earlier:
        return None
    return max(
        earlier, key=lambda c: (not protocol_differences(c.protocol, spec.protocol), c.created_at)
    )


def comparison_rows(
    snapshots: Sequence[Snapshot],
    *,
    candidates: Sequence[Snapshot] | None = None,
    max_age_s: float,
    lifetimes: Mapping[int, LifetimeCheck] | None = None,
) -> list[ComparisonRow]:
    """One row per snapshot, in the order given.

    A speculative snapshot is compared with `match_baseline` among `candidates` (by default the
    snapshots themselves), whatever server it was taken on; validity says whether it applied
    when the snapshot was taken (`snapshot_validity`), however long ago that was.

    Args:
        snapshots: The snapshots to tabulate.
        candidates: Where baselines are looked for (every stored snapshot, typically).
        max_age_s: Baselines taken longer than this before a run are stale for it.
        lifetimes: The baseline servers' lifetime checks by baseline id
            (`session.baselines.check_lifetimes`); a baseline missing here is unverified.
    """
    pool_of = candidates if candidates is not None else snapshots
    rows = []
    for snapshot in snapshots:
        decode = summary_of(snapshot, "decode_tok_s")
        row = ComparisonRow(
            id=snapshot.id,
            url=snapshot.url,
            created_at=snapshot.created_at,
            label=snapshot.label,
            config=describe_config(snapshot.server.speculative),
            speculative=snapshot.server.speculative is not None,
            pooled=pool(snapshot.runs),
            decode_tok_s_min=decode.min if decode else None,
            decode_tok_s_max=decode.max if decode else None,
        )
        if row.speculative:
            row = _paired(row, snapshot, pool_of, max_age_s, lifetimes or {})
        rows.append(row)
    return rows


def _paired(
    row: ComparisonRow,
    spec: Snapshot,
    candidates: Sequence[Snapshot],
    max_age_s: float,
    lifetimes: Mapping[int, LifetimeCheck],
) -> ComparisonRow:
    """A speculative row with its baseline's comparison and validity, or why it has none."""
    base = match_baseline(spec, candidates)
    if base is None:
        return replace(row, no_baseline=NO_BASELINE)
    lifetime = lifetime_for(base, spec, lifetimes)
    return replace(
        row,
        baseline_id=base.id,
        baseline_url=base.url,
        comparison=compare(row.pooled, pool(base.runs)),
        validity=snapshot_validity(base, spec, max_age_s=max_age_s, lifetime=lifetime),
    )


# (key: CSV header and JSON key, Markdown header) of the table columns, in order.
_COLUMNS = (
    ("id", "id"),
    ("url", "url"),
    ("created", "created"),
    ("label", "label"),
    ("config", "config"),
    ("decode_tok_s", "decode tok/s"),
    ("decode_tok_s_min", "min"),
    ("decode_tok_s_max", "max"),
    ("accept_length", "accept"),
    ("cycle_ms", "cycle ms"),
    ("baseline_id", "baseline"),
    ("baseline_decode_tok_s", "baseline tok/s"),
    ("speedup", "speedup"),
    ("verdict", "verdict"),
    ("break_even", "break-even"),
    ("baseline_valid", "baseline valid"),
)


def format_time(unix_s: float) -> str:
    """ISO 8601 in UTC to the second, e.g. "2025-06-01T14:03:00Z"."""
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fixed(value: float | None, digits: int) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def _cells(row: ComparisonRow) -> list[str | None]:
    """The row's cells in `_COLUMNS` order; None for a missing figure."""
    c = row.comparison
    return [
        None if row.id is None else str(row.id),
        row.url,
        format_time(row.created_at),
        row.label,
        row.config,
        _fixed(row.pooled.decode_tok_s, 1),
        _fixed(row.decode_tok_s_min, 1),
        _fixed(row.decode_tok_s_max, 1),
        _fixed(row.pooled.accept_length, 2),
        _fixed(row.pooled.cycle_ms, 1),
        None if row.baseline_id is None else str(row.baseline_id),
        _fixed(c.base_tok_s if c else None, 1),
        speedup_text(c.speedup) if c else None,
        verdict_text(c) if c else None,
        _fixed(c.break_even if c else None, 2),
        row.baseline_note,
    ]


def _json_object(row: ComparisonRow) -> dict[str, Any]:
    """Full-precision numbers for scripts; speedup as fractions (0.21 is +21%)."""
    validity = row.validity
    c = row.comparison
    return {
        "id": row.id,
        "url": row.url,
        "created_at": row.created_at,
        "label": row.label,
        "config": row.config,
        "speculative": row.speculative,
        "decode_tok_s": row.pooled.decode_tok_s,
        "decode_tok_s_min": row.decode_tok_s_min,
        "decode_tok_s_max": row.decode_tok_s_max,
        "accept_length": row.pooled.accept_length,
        "cycle_ms": row.pooled.cycle_ms,
        "baseline_id": row.baseline_id,
        "baseline_url": row.baseline_url,
        "baseline_decode_tok_s": c.base_tok_s if c else None,
        "speedup": None
        if c is None
        else {"value": c.speedup.value, "low": c.speedup.low, "high": c.speedup.high},
        "verdict": c.verdict.value if c else None,
        "break_even": c.break_even if c else None,
        "margin": c.margin if c else None,
        "baseline_valid": None if validity is None else validity.valid,
        "baseline_confirmed": None if validity is None else validity.confirmed,
        "baseline_reasons": None if validity is None else list(validity.reasons),
        "baseline_unverified": None if validity is None else list(validity.unverified),
        "no_baseline": row.no_baseline,
    }


def export(rows: Sequence[ComparisonRow], fmt: ExportFormat) -> str:
    """Render comparison rows as a Markdown table, CSV (with a header row) or a JSON list.

    Markdown and CSV show formatted figures (tok/s and ms to 1 decimal, accept lengths to 2,
    speedup as a signed percent with its interval); JSON keeps full-precision numbers.
    Missing figures are "—" in Markdown, empty in CSV, null in JSON.
    """
    if fmt == "json":
        return json.dumps([_json_object(row) for row in rows], indent=2, ensure_ascii=False)
    if fmt == "csv":
        buffer = io.StringIO()
        # "\n", not RFC 4180's "\r\n": the text is printed or written in text mode by the caller.
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(key for key, _ in _COLUMNS)
        writer.writerows(["" if cell is None else cell for cell in _cells(row)] for row in rows)
        return buffer.getvalue()
    if fmt == "md":
        lines = [
            "| " + " | ".join(header for _, header in _COLUMNS) + " |",
            "|" + "|".join("---" for _ in _COLUMNS) + "|",
        ]
        lines.extend(
            "| " + " | ".join(_md_cell(cell) for cell in _cells(row)) + " |" for row in rows
        )
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown export format {fmt!r} (md, csv or json)")


def _md_cell(cell: str | None) -> str:
    if cell is None:
        return DASH
    # A pipe would end the cell and a newline the row.
    return cell.replace("|", "\\|").replace("\n", " ")


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
    if comparison.margin is None:
        return text
    accept = comparison.break_even + comparison.margin
    return f"{text}; measured {accept:.2f}, margin {comparison.margin:+.2f}"


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
            f" over {runs} run{'s' if runs != 1 else ''}"
            f" ({pooled.ms_per_token:.1f} ms/token)"
        )
    return "  ".join(parts)
