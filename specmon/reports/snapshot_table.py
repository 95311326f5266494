"""Stored snapshots side by side: comparison rows and their export (Markdown, CSV, JSON); the
report of `specmon snapshots compare BASE SPEC` is in `compare_report`.

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
from typing import Literal

from specmon.analysis.baseline_rule import BaselineChoice, Pin, Wanted, choose_baseline
from specmon.analysis.catalogue import CATALOGUE, Measured, figure
from specmon.analysis.comparison import Comparison, compare
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.validity import (
    LifetimeCheck,
    LifetimeState,
    Validity,
    fingerprint,
    relaunched_for_speculation,
    snapshot_validity,
)
from specmon.model import Snapshot
from specmon.probe_prompts import ProbePrompt, category_of
from specmon.safe_text import safe_text
from specmon.storage.serialize import summary_of
from specmon.wording import (
    DASH,
    describe_config,
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
    category: str | None
    """The category of its protocol's prompt (`probe_prompts.category_of`); None when unknown."""
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
    taken at one address, else what the session found (`checked`, by baseline id) as of the
    run's time (a restart known to have come after the run does not make it stale)."""
    if base.url == spec.url and spec.server.speculative is not None:
        return relaunched_for_speculation()
    found = checked.get(base.id, NOT_CHECKED) if base.id is not None else NOT_CHECKED
    return found.as_of(spec.created_at)


def stored_choice(
    spec: Snapshot,
    candidates: Sequence[Snapshot],
    *,
    max_age_s: float,
    lifetimes: Mapping[int, LifetimeCheck],
    pin: Pin | None = None,
) -> tuple[BaselineChoice, Validity | None]:
    """The baseline of a stored speculative run by the one rule (`choose_baseline`), and
    whether it applied when the run was taken (`snapshot_validity`): the `c` screen, `snapshots
    export` and `snapshots compare` (which pins the pair it is given) alike.

    Candidates are the plain snapshots of any server with the run's configuration and protocol
    taken before it (a later baseline is another launch, never its baseline); valid ones
    before newer ones, so it is the one that applied when the run was taken if any did (for
    `ab`, the run's own round's).

    Args:
        spec: The stored speculative run.
        candidates: Where baselines are looked for (every stored snapshot, typically).
        max_age_s: Baselines taken longer than this before the run are stale for it.
        lifetimes: The baseline servers' lifetime checks by baseline id
            (`session.baselines.check_lifetimes`); a baseline missing here is unverified.
        pin: The baseline the user named (`snapshots compare BASE SPEC`).
    """

    def judge(base: Snapshot) -> Validity:
        lifetime = lifetime_for(base, spec, lifetimes)
        return snapshot_validity(base, spec, max_age_s=max_age_s, lifetime=lifetime)

    wanted = Wanted.of(spec.protocol, side="the run")
    choice = choose_baseline(
        candidates, spec.server, wanted, judge, pin=pin, before=spec.created_at
    )
    return choice, None if choice.baseline is None else judge(choice.baseline)


def baseline_candidates(
    specs: Sequence[Snapshot], candidates: Sequence[Snapshot]
) -> list[Snapshot]:
    """The plain snapshots whose servers' lifetimes bear on the rule's choice for these runs
    (of one of their configurations, taken before the latest of them): the ones to read."""
    keys = {fingerprint(s.server.args) for s in specs if s.server.speculative is not None}
    if not keys:
        return []
    last = max(s.created_at for s in specs)
    return [
        c
        for c in candidates
        if c.server.speculative is None
        and c.created_at <= last
        and fingerprint(c.server.args) in keys
    ]


def comparison_rows(
    snapshots: Sequence[Snapshot],
    *,
    candidates: Sequence[Snapshot] | None = None,
    max_age_s: float,
    lifetimes: Mapping[int, LifetimeCheck] | None = None,
    prompts: Sequence[ProbePrompt] = (),
) -> list[ComparisonRow]:
    """One row per snapshot, in the order given.

    A speculative snapshot is compared with its baseline by the one rule among `candidates`
    (by default the snapshots themselves; `stored_choice`), whatever server it was taken on;
    validity says whether it applied when the snapshot was taken (`snapshot_validity`),
    however long ago that was.

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
            category=category_of(snapshot.protocol.prompt, prompts),
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
    choice, validity = stored_choice(spec, candidates, max_age_s=max_age_s, lifetimes=lifetimes)
    base = choice.baseline
    if base is None:
        return replace(row, no_baseline=choice.why_none())
    return replace(
        row,
        baseline_id=base.id,
        baseline_url=base.url,
        comparison=compare(row.pooled, pool(base.runs)),
        validity=validity,
    )


EXPORT_SCHEMA = 6
"""The JSON export's version: 6 adds `ttft_ms` (CSV: its last column); 5
`baseline_conditions`; 4 `ms_per_token`; 3 each row's `category`; 2 wrapped the rows in
{"schema", "rows"} and named every figure as the CSV does (1 was a bare list with a nested
speedup)."""

_MD_ORDER = ("id", "url", "created", "label", "category", "config", "decode tok/s", "min", "max",
             "accept", "cycle ms", "baseline", "baseline tok/s", "speedup", "verdict", "break-even",
             "baseline valid")  # fmt: skip
"""The Markdown table's columns before the catalogue, in their order; the catalogue's figures
(`analysis.catalogue`) are headed by their `markdown` name."""
_MD_FIGURES = {f.markdown: f for f in CATALOGUE if f.markdown is not None}
_HEADERS = (*_MD_ORDER, *(header for header in _MD_FIGURES if header not in _MD_ORDER))
"""The Markdown table's columns, in order: a figure added to the catalogue since joins at the
end, so no column moves."""


def format_time(unix_s: float) -> str:
    """ISO 8601 in UTC to the second, e.g. "2025-06-01T14:03:00Z"."""
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


DECODE = figure("decode tok/s")
"""The runs' decode range and the baseline's tok/s are values of it: written to its digits."""


def _measured(row: ComparisonRow) -> Measured:
    """What the catalogue's figures read of a row: its runs and its comparison."""
    return Measured(pooled=row.pooled, comparison=row.comparison)


def _cells(row: ComparisonRow) -> list[str | None]:
    """The row's Markdown cells in `_HEADERS` order, as people read them; None when missing."""
    c = row.comparison
    measured = _measured(row)
    cells = {
        "id": None if row.id is None else str(row.id),
        "url": row.url,
        "created": format_time(row.created_at),
        "label": row.label,
        "category": row.category,
        "config": row.config,
        "min": DECODE.format(row.decode_tok_s_min),
        "max": DECODE.format(row.decode_tok_s_max),
        "baseline": None if row.baseline_id is None else str(row.baseline_id),
        "baseline tok/s": DECODE.format(c.base_tok_s if c else None),
        "verdict": verdict_text(c) if c else None,
        "baseline valid": row.baseline_note,
        **{header: figure.written(measured) for header, figure in _MD_FIGURES.items()},
    }
    return [cells[header] for header in _HEADERS]


_COLUMNS = ("id", "url", "created", "created_at", "label", "category", "config", "speculative",
            "decode_tok_s", "decode_tok_s_min", "decode_tok_s_max", "accept_length", "cycle_ms",
            "baseline_id", "baseline_url", "baseline_decode_tok_s", "speedup_ratio",
            "speedup_ratio_low", "speedup_ratio_high", "interval_level", "verdict", "break_even",
            "margin", "baseline_valid", "baseline_confirmed", "baseline_reasons",
            "baseline_unverified", "no_baseline")  # fmt: skip
"""The CSV/JSON columns before the catalogue, in their order (docs/usage.md)."""
_EXPORTED = {f.export_key: f for f in CATALOGUE if f.export_key is not None}
_ADDED = ("ms_per_token", "baseline_conditions", "ttft_ms")
"""The columns added since schema 3, in the order they were added (schema 4, 5, 6)."""
EXPORT_COLUMNS = (
    *_COLUMNS,
    *_ADDED,
    *(key for key in _EXPORTED if key not in (*_COLUMNS, *_ADDED)),
)
"""The CSV/JSON columns, in order, append only (a script reading by position keeps working): a
new column, a catalogue figure's too, goes last in `_ADDED` (a figure left out of it joins at
the end, until a later column is added there)."""


def _record(row: ComparisonRow) -> dict[str, object]:
    """A row for scripts, CSV and JSON alike, keyed by `EXPORT_COLUMNS`: numbers at full
    precision, the speedup and its interval as ratios (0.21 is +21%), validity as booleans and
    its reasons as text; None when missing."""
    c, validity = row.comparison, row.validity
    gain = c.speedup if c else None
    measured = _measured(row)
    record: dict[str, object] = {
        "id": row.id,
        "url": row.url,
        "created": format_time(row.created_at),
        "created_at": row.created_at,
        "label": row.label,
        "category": row.category,
        "config": row.config,
        "speculative": row.speculative,
        "decode_tok_s_min": row.decode_tok_s_min,
        "decode_tok_s_max": row.decode_tok_s_max,
        "baseline_id": row.baseline_id,
        "baseline_url": row.baseline_url,
        "baseline_decode_tok_s": c.base_tok_s if c else None,
        # The interval's confidence (0.95); None without an interval.
        "interval_level": gain.level if gain and gain.low is not None else None,
        "verdict": c.verdict.value if c else None,
        "baseline_valid": None if validity is None else validity.valid,
        "baseline_confirmed": None if validity is None else validity.confirmed,
        "baseline_reasons": None if validity is None else list(validity.reasons),
        "baseline_unverified": None if validity is None else list(validity.unverified),
        "baseline_conditions": None if validity is None else list(validity.conditions),
        "no_baseline": row.no_baseline,
        **{key: figure.get(measured) for key, figure in _EXPORTED.items()},
    }
    return {column: record[column] for column in EXPORT_COLUMNS}


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""How a spreadsheet recognises a formula in a cell it opens (OWASP's "CSV injection")."""


def _csv_value(value: object) -> str:
    """Empty when missing, true/false, reasons joined by "; ", numbers as Python writes them;
    a text (a label, a model, a reason) that a spreadsheet would run as a formula starts with
    "'" instead, so that it opens as the text it is."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = "; ".join(map(str, value)) if isinstance(value, list) else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def export(rows: Sequence[ComparisonRow], fmt: ExportFormat) -> str:
    """Render comparison rows as a Markdown table, CSV (with a header row) or JSON.

    Markdown is for people: each catalogued figure to its digits (tok/s and ms to 1 decimal,
    TTFT to whole ms, accept lengths to 2), the speedup as a signed percent with its interval,
    validity as ✓/✗ with its reasons, missing figures "—".
    CSV and JSON are for scripts, with the same names and values (`EXPORT_COLUMNS`): missing figures
    are empty in CSV, null in JSON; JSON is `{"schema": EXPORT_SCHEMA, "rows": [...]}`.
    """
    if fmt == "json":
        records = [{k: _shown(v) for k, v in _record(row).items()} for row in rows]
        document = {"schema": EXPORT_SCHEMA, "rows": records}
        return json.dumps(document, indent=2, ensure_ascii=False)
    if fmt == "csv":
        buffer = io.StringIO()
        # "\n", not RFC 4180's "\r\n": the text is printed or written in text mode by the caller.
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(EXPORT_COLUMNS)
        writer.writerows([_csv_value(_shown(v)) for v in _record(row).values()] for row in rows)
        return buffer.getvalue()
    if fmt == "md":
        lines = [
            "| " + " | ".join(_HEADERS) + " |",
            "|" + "|".join("---" for _ in _HEADERS) + "|",
        ]
        lines.extend(
            "| " + " | ".join(_md_cell(cell) for cell in _cells(row)) + " |" for row in rows
        )
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown export format {fmt!r} (md, csv or json)")


def _md_cell(cell: str | None) -> str:
    if cell is None:
        return DASH
    # A pipe would end the cell and a newline the row; a control character is shown, not sent.
    return safe_text(cell.replace("\n", " "), limit=None).replace("|", "\\|")


def _shown(value: object) -> object:
    """A value of a row as written out: its text safe (`safe_text`), again on the way out, for
    a snapshot read before the store made it so; every other value as it is."""
    if isinstance(value, str):
        return safe_text(value, limit=None)
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value
