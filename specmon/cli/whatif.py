"""`specmon whatif URL`: bench the server at its draft length, predict the others."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.cli import stopping
from specmon.cli.agent import add_gpu_metrics
from specmon.cli.bench import report_unsaved
from specmon.cli.common import (
    EXIT_INTERRUPTED,
    add_connection,
    add_db,
    add_max_age,
    add_metrics_url,
    count,
    open_store,
    positive_int,
    store_setting,
    takes,
    target_of,
    tokens,
)
from specmon.model import Protocol
from specmon.probe_prompts import DEFAULT_MAX_TOKENS, DEFAULT_PROMPT
from specmon.reports.bench_text import target_line
from specmon.session.baselines import pin_of
from specmon.storage.store import Store
from specmon.whatif.measure import WhatIfReport, measure_what_if
from specmon.whatif.text import LABELS, row, summary, whatif_to_dict

DEFAULT_WHATIF_RUNS = 3
DEFAULT_WHATIF_TOKENS = DEFAULT_MAX_TOKENS
WHATIF_SCHEMA = 2
"""The `whatif --json` object's version (2: `best_draft_tokens` the advisor's, whole flags)."""


def register(commands: Any) -> None:
    """Add the `whatif` subcommand."""
    whatif = commands.add_parser(
        "whatif",
        help="predict tokens per step, cycle, decode tok/s and speedup at other draft lengths",
        description="Benches the server at its current draft length (saved, as bench does), "
        "then predicts every draft length from 1 to two past it: tokens per step from the "
        "acceptance by draft position, the cycle from a cost model fitted to this bench, the "
        "store's valid baseline and earlier snapshots of this configuration at other draft "
        "lengths; decode tok/s and the speedup against the baseline, with an interval, and "
        "the best draft length. Exit 0 predicted, 1 no prediction or a failed bench, 2 bad "
        "arguments, 130 interrupted.",
        allow_abbrev=False,
    )
    whatif.add_argument("server", metavar="URL", help="the speculative server's address")
    whatif.add_argument(
        "--runs",
        type=positive_int,
        default=DEFAULT_WHATIF_RUNS,
        help=f"timed runs (default {DEFAULT_WHATIF_RUNS})",
    )
    whatif.add_argument("--warmup", type=count, default=1, help="warm-up runs (default 1)")
    whatif.add_argument(
        "--max-tokens",
        type=tokens,
        metavar="N",
        help=f"tokens per run when no baseline sets them (default {DEFAULT_WHATIF_TOKENS}); a "
        "baseline's protocol wins, and whatif says so",
    )
    whatif.add_argument(
        "--baseline",
        metavar="ID|URL",
        help="predict against this stored baseline (a snapshot id), or the newest of this "
        "baseline server's snapshots that applies, instead of the rule's choice",
    )
    add_max_age(whatif)
    whatif.add_argument(
        "--json", action="store_true", help=f"print one JSON object (schema {WHATIF_SCHEMA})"
    )
    add_db(whatif)
    add_gpu_metrics(whatif)
    add_metrics_url(whatif)
    add_connection(whatif)
    whatif.set_defaults(run=run, interrupted="the bench did not complete: nothing predicted")
    takes(whatif, max_age=DEFAULT_MAX_AGE_S)


def run(args: argparse.Namespace) -> int:
    """Measure, predict and print."""
    # It reads the store's baselines before it saves its bench: a --db that names no store is
    # a mistyped path (whose baselines would be none, silently), while the default store is
    # made on first use, as by `bench`.
    with open_store(args, create=not store_setting(args)) as store:
        report = stopping.run(_measure(args, store))
    if args.json:
        print(json.dumps(report_to_dict(report), indent=2))
    else:
        print("\n".join(report_lines(report)))
    saving = report.saving
    if saving is not None and not saving.saved:
        return report_unsaved(saving)  # where the bench is kept, and how to import it
    if saving is not None and saving.interrupted:
        return EXIT_INTERRUPTED
    return 0 if report.answer.result is not None else 1


async def _measure(args: argparse.Namespace, store: Store) -> WhatIfReport:
    out = sys.stderr if args.json else sys.stdout
    tokens = args.max_tokens or DEFAULT_WHATIF_TOKENS
    protocol = Protocol(args.runs, args.warmup, tokens, 0.0, DEFAULT_PROMPT)
    return await measure_what_if(
        target_of(args),
        store,
        protocol,
        asked_tokens=args.max_tokens,
        max_age_s=args.max_age,
        gpu_metrics=args.gpu_metrics,
        say=lambda line: print(line, file=out, flush=True),
        pin=pin_of(args.baseline),
    )


def report_lines(report: WhatIfReport) -> list[str]:
    """The human output: the server, the baseline, the table and the summary."""
    info = report.server
    line = f"{report.url}: {target_line(info)}"
    if report.snapshot is not None and report.snapshot.id is not None:
        line += f" (measured now, saved as snapshot #{report.snapshot.id})"
    elif report.snapshot is not None:
        line += " (measured now, not saved)"
    lines = [line]
    if report.baseline is not None:
        note = f"; {report.baseline_note}" if report.baseline_note else ""
        lines.append(f"baseline: #{report.baseline.id} ({report.baseline.url}){note}")
    elif report.baseline_note:
        lines.append(f"baseline: none used: {report.baseline_note}")
    result = report.answer.result
    if result is None:
        lines.append(f"no prediction: {report.answer.reason}")
        return lines
    cells = [row(info, p, result.choice.draft_tokens, result) for p in result.predictions]
    rows = [list(LABELS.values()), *([c[key] for key in LABELS] for c in cells)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(LABELS))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += summary(info, result)
    return lines


def report_to_dict(report: WhatIfReport) -> dict[str, Any]:
    """`whatif --json` (schema 2: `best_draft_tokens` is the length the advisor names, and the
    flags are whole): `predictions` (one object per draft length) and what they rest on."""
    result = report.answer.result
    body: dict[str, Any] = {"schema": WHATIF_SCHEMA, "predictions": []}
    if result is not None:
        body.update(whatif_to_dict(report.server, result))
    body.update(
        {
            "url": report.url,
            "snapshot_id": None if report.snapshot is None else report.snapshot.id,
            "reason": report.answer.reason,
            "baseline": None
            if report.baseline is None
            else {"snapshot_id": report.baseline.id, "url": report.baseline.url},
            "baseline_note": report.baseline_note,
        }
    )
    return body
