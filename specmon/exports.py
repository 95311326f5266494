"""Stored snapshots side by side: comparison rows, their export (Markdown, CSV, JSON), and the
human report of `specmon snapshots compare BASE SPEC`.

Every derived figure comes from `analysis` (speedup, break-even, validity); this module only
pairs snapshots and formats. Missing figures stay None and render as "—" (Markdown and text),
an empty cell (CSV) or null (JSON), never 0.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from specmon.analysis.breakeven import break_even_accept_length, ms_per_token
from specmon.analysis.stats import Speedup, speedup
from specmon.analysis.validity import Validity, baseline_validity, fingerprint
from specmon.model import Snapshot, SpecConfig
from specmon.serialize import summary_of

MISSING = "—"

ExportFormat = Literal["md", "csv", "json"]


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """One snapshot's figures, and for a speculative one its comparison with a baseline."""

    id: int | None
    created_at: float
    label: str | None
    config: str
    """`SpecConfig.describe()`, or "no speculation"."""
    speculative: bool
    decode_tok_s: float | None
    """Median decode tok/s over the runs."""
    decode_tok_s_min: float | None
    decode_tok_s_max: float | None
    accept_length: float | None
    """Median client-side accept length; None without speculation."""
    cycle_ms: float | None
    """Median draft+verify cycle; None without speculation."""
    baseline_id: int | None = None
    """The matched baseline (speculative rows only)."""
    speedup: Speedup | None = None
    break_even: float | None = None
    """Break-even accept length against the matched baseline."""
    validity: Validity | None = None
    """Whether the matched baseline applies; None when there is none."""


def describe_config(speculative: SpecConfig | None) -> str:
    """ "EAGLE3 steps=2 topk=1 draft=3", or "no speculation"."""
    return "no speculation" if speculative is None else speculative.describe()


def snapshot_speedup(spec: Snapshot, base: Snapshot) -> Speedup | None:
    """Decode tok/s speedup of `spec` over `base` with its 95% interval; None without figures."""
    spec_values = [r.decode_tok_s for r in spec.runs if r.decode_tok_s is not None]
    base_values = [r.decode_tok_s for r in base.runs if r.decode_tok_s is not None]
    try:
        return speedup(spec_values, base_values)
    except ValueError:
        # No decode figures on one side, or a non-positive rate: there is no speedup to show.
        return None


def snapshot_break_even(spec: Snapshot, base: Snapshot) -> float | None:
    """Median cycle of `spec` over the median ms/token of `base` (DESIGN.md §1)."""
    cycle = summary_of(spec, "cycle_ms")
    decode = summary_of(base, "decode_tok_s")
    if cycle is None or decode is None or decode.median <= 0:
        return None
    return break_even_accept_length(cycle.median, ms_per_token(decode.median))


def comparison_rows(
    snapshots: Sequence[Snapshot], *, now: float, max_age_s: float
) -> list[ComparisonRow]:
    """One row per snapshot (all of one target), in the order given.

    A speculative snapshot is compared with the newest non-speculative snapshot of the list with
    the same fingerprint, whether taken before or after it; validity says whether that baseline
    applies (`analysis.validity.baseline_validity`).

    Args:
        snapshots: The snapshots to tabulate.
        now: Current unix time, for the baselines' age.
        max_age_s: Older baselines are stale.
    """
    baselines: dict[str, Snapshot] = {}
    for snapshot in snapshots:
        if snapshot.server.speculative is None:
            key = fingerprint(snapshot.server.args)
            known = baselines.get(key)
            if known is None or snapshot.created_at > known.created_at:
                baselines[key] = snapshot
    rows = []
    for snapshot in snapshots:
        decode = summary_of(snapshot, "decode_tok_s")
        accept = summary_of(snapshot, "accept_length")
        cycle = summary_of(snapshot, "cycle_ms")
        row = ComparisonRow(
            id=snapshot.id,
            created_at=snapshot.created_at,
            label=snapshot.label,
            config=describe_config(snapshot.server.speculative),
            speculative=snapshot.server.speculative is not None,
            decode_tok_s=decode.median if decode else None,
            decode_tok_s_min=decode.min if decode else None,
            decode_tok_s_max=decode.max if decode else None,
            accept_length=accept.median if accept else None,
            cycle_ms=cycle.median if cycle else None,
        )
        base = baselines.get(fingerprint(snapshot.server.args)) if row.speculative else None
        if base is not None:
            row = replace(
                row,
                baseline_id=base.id,
                speedup=snapshot_speedup(snapshot, base),
                break_even=snapshot_break_even(snapshot, base),
                validity=baseline_validity(base, snapshot, now=now, max_age_s=max_age_s),
            )
        rows.append(row)
    return rows


# (key: CSV header and JSON key, Markdown header) of the table columns, in order.
_COLUMNS = (
    ("id", "id"),
    ("created", "created"),
    ("label", "label"),
    ("config", "config"),
    ("decode_tok_s", "decode tok/s"),
    ("decode_tok_s_min", "min"),
    ("decode_tok_s_max", "max"),
    ("accept_length", "accept"),
    ("cycle_ms", "cycle ms"),
    ("baseline_id", "baseline"),
    ("speedup", "speedup"),
    ("break_even", "break-even"),
    ("baseline_valid", "baseline valid"),
)


def format_speedup(value: Speedup | None) -> str | None:
    """ "+21.0% [+18.2%, +23.9%]" (the interval only when there is one), or None."""
    if value is None:
        return None
    text = f"{value.value:+.1%}"
    if value.low is not None and value.high is not None:
        text += f" [{value.low:+.1%}, {value.high:+.1%}]"
    return text


def format_validity(validity: Validity | None) -> str | None:
    """ "✓", "✗ reason; reason", or None when there is no baseline."""
    if validity is None:
        return None
    return "✓" if validity.valid else "✗ " + "; ".join(validity.reasons)


def format_time(unix_s: float) -> str:
    """ISO 8601 in UTC to the second, e.g. "2025-06-01T14:03:00Z"."""
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fixed(value: float | None, digits: int) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def _cells(row: ComparisonRow) -> list[str | None]:
    """The row's cells in `_COLUMNS` order; None for a missing figure."""
    return [
        None if row.id is None else str(row.id),
        format_time(row.created_at),
        row.label,
        row.config,
        _fixed(row.decode_tok_s, 1),
        _fixed(row.decode_tok_s_min, 1),
        _fixed(row.decode_tok_s_max, 1),
        _fixed(row.accept_length, 2),
        _fixed(row.cycle_ms, 1),
        None if row.baseline_id is None else str(row.baseline_id),
        format_speedup(row.speedup),
        _fixed(row.break_even, 2),
        format_validity(row.validity),
    ]


def _json_object(row: ComparisonRow) -> dict[str, Any]:
    """Full-precision numbers for scripts; speedup as fractions (0.21 is +21%)."""
    validity = row.validity
    return {
        "id": row.id,
        "created_at": row.created_at,
        "label": row.label,
        "config": row.config,
        "speculative": row.speculative,
        "decode_tok_s": row.decode_tok_s,
        "decode_tok_s_min": row.decode_tok_s_min,
        "decode_tok_s_max": row.decode_tok_s_max,
        "accept_length": row.accept_length,
        "cycle_ms": row.cycle_ms,
        "baseline_id": row.baseline_id,
        "speedup": None
        if row.speedup is None
        else {"value": row.speedup.value, "low": row.speedup.low, "high": row.speedup.high},
        "break_even": row.break_even,
        "baseline_valid": None if validity is None else validity.valid,
        "baseline_reasons": None if validity is None else list(validity.reasons),
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
        return MISSING
    # A pipe would end the cell and a newline the row.
    return cell.replace("|", "\\|").replace("\n", " ")


def compare_text(base: Snapshot, spec: Snapshot, *, now: float, max_age_s: float) -> str:
    """The report of `specmon snapshots compare BASE SPEC`, one fact per line.

    Says loudly when BASE is not a baseline (speculation on) and, line by line prefixed
    "STALE BASELINE:", every reason the baseline does not apply; then, prefixed "GPU WARNING:",
    every way the GPUs' condition differed between the two (clocks, power limit, throttling,
    other processes).
    """
    lines = [_header("base", base), _header("spec", spec)]
    base_speculative = base.server.speculative is not None
    if base_speculative:
        lines.append(
            f"NOT A BASELINE: {_name(base)} ran with speculation on "
            f"({describe_config(base.server.speculative)}); take one with speculation off"
        )
    validity = baseline_validity(base, spec, now=now, max_age_s=max_age_s)
    if validity.valid:
        age_min = (now - base.created_at) / 60
        lines.append(f"baseline valid ✓ (taken {age_min:.0f} min ago)")
    else:
        lines.extend(f"STALE BASELINE: {reason}" for reason in validity.reasons)
    lines.extend(f"GPU WARNING: {warning}" for warning in validity.warnings)

    value = snapshot_speedup(spec, base)
    speedup_text = format_speedup(value) or MISSING
    if value is not None and value.low is not None:
        speedup_text += " (95% interval)"
    if not validity.valid and value is not None:
        speedup_text += ": does not hold, stale baseline"
    lines.append(f"speedup         {speedup_text}")

    accept = summary_of(spec, "accept_length")
    server_accept = summary_of(spec, "server_accept_length")
    cycle = summary_of(spec, "cycle_ms")
    accept_text = MISSING if accept is None else f"{accept.median:.2f} (client, median)"
    if server_accept is not None:
        accept_text += f"; server says {server_accept.median:.2f}"
    lines.append(f"accept length   {accept_text}")
    cycle_text = MISSING if cycle is None else f"{cycle.median:.1f} ms per draft+verify (median)"
    lines.append(f"cycle           {cycle_text}")

    lines.append("break-even      " + _break_even_text(base, spec, base_speculative))
    return "\n".join(lines) + "\n"


def _break_even_text(base: Snapshot, spec: Snapshot, base_speculative: bool) -> str:
    if base_speculative:
        return f"{MISSING} (BASE is not plain decoding)"
    if spec.server.speculative is None:
        return f"{MISSING} (SPEC ran without speculation)"
    break_even = snapshot_break_even(spec, base)
    if break_even is None:
        return MISSING
    text = f"accept length {break_even:.2f}"
    accept = summary_of(spec, "accept_length")
    if accept is None:
        return text
    margin = accept.median - break_even
    verdict = "winning" if margin > 0 else "losing" if margin < 0 else "even"
    return f"{text}; measured {accept.median:.2f}, margin {margin:+.2f}: {verdict}"


def _name(snapshot: Snapshot) -> str:
    return "(unsaved)" if snapshot.id is None else f"#{snapshot.id}"


def _header(role: str, snapshot: Snapshot) -> str:
    """E.g. "spec  #4 EAGLE3 steps=2  2025-06-01T14:03:00Z "tuned"  decode 75.9 tok/s [...]"."""
    parts = [f"{role:<5} {_name(snapshot)}", describe_config(snapshot.server.speculative)]
    parts.append(format_time(snapshot.created_at))
    if snapshot.label:
        parts.append(json.dumps(snapshot.label, ensure_ascii=False))
    decode = summary_of(snapshot, "decode_tok_s")
    if decode is None:
        parts.append(f"decode {MISSING} tok/s")
    else:
        runs = len(snapshot.runs)
        text = (
            f"decode {decode.median:.1f} tok/s [{decode.min:.1f}–{decode.max:.1f}]"
            f" over {runs} run{'s' if runs != 1 else ''}"
        )
        if decode.median > 0:
            text += f" ({ms_per_token(decode.median):.1f} ms/token)"
        parts.append(text)
    return "  ".join(parts)
