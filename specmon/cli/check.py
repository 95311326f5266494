"""`specmon check URL`: triage in seconds; exit 0 healthy, 1 degraded, 2 unreachable or refused,
3 the snapshot store unreadable."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from specmon.analysis.sequential import DEFAULT_BUDGET_S
from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.check import CHECK_RULE, DEFAULT_CHECK_TOKENS, CheckSession, run_check
from specmon.cli import stopping
from specmon.cli.agent import add_gpu_metrics
from specmon.cli.check_progress import CheckProgress
from specmon.cli.common import (
    add_connection,
    add_db,
    add_max_age,
    add_metrics_url,
    open_store,
    probe_prompts_arg,
    seconds,
    setting,
    store_setting,
    takes,
    target_of,
)
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, Snapshot
from specmon.reports.check_report import CHECK_SCHEMA, EXIT_STORE, EXIT_UNREACHABLE, report_to_dict
from specmon.session.ab_lookup import lookup_ab
from specmon.session.baselines import pin_of
from specmon.sources.http import make_client
from specmon.sources.telemetry import open_telemetry
from specmon.sources.workers import open_connection
from specmon.storage.store import Store, StoreMissing


def register(commands: Any) -> None:
    """Add the `check` subcommand."""
    check = commands.add_parser(
        "check",
        help="triage a server: exit 0 healthy, 1 degraded, 2 unreachable or refused, 3 store "
        "unreadable",
        description="Reachability, version, auth, metrics, speculation, one short probe and, "
        "with a valid baseline in the store, more probes until the speedup's interval excludes "
        "0 or --budget runs out, then the speedup and break-even. "
        "Exit 0 healthy, 1 degraded, 2 unreachable or refused, 3 the snapshot store cannot be "
        "read (--db names no store, or it is corrupt or locked): nothing checked.",
        allow_abbrev=False,
    )
    check.add_argument("server", metavar="URL", help="server address")
    check.add_argument(
        "--probe-tokens",
        type=setting("probe_tokens"),
        default=argparse.SUPPRESS,
        metavar="N",
        help=f"probe size when no baseline sets it (default {DEFAULT_CHECK_TOKENS}); a "
        "baseline's protocol wins, and check says so",
    )
    check.add_argument(
        "--probe-prompts",
        default=argparse.SUPPRESS,
        metavar="builtin|FILE",
        help="after the verdict, one probe per category of these prompts ('builtin': code, "
        "chat, math, summarisation, repetitive; or a JSONL file as the dashboard's), reported "
        "per category",
    )
    check.add_argument(
        "--baseline",
        metavar="ID|URL",
        help="compare with this stored baseline (a snapshot id), or with the newest of this "
        "baseline server's snapshots that applies, instead of the rule's choice (the latest "
        "valid baseline of the server's configuration and protocol, any server)",
    )
    check.add_argument(
        "--budget",
        type=seconds,
        default=DEFAULT_BUDGET_S,
        metavar="SECONDS",
        help="against a valid baseline, probe until the speedup's interval excludes 0, for at "
        f"most this long and {CHECK_RULE.max_probes} probes (default {DEFAULT_BUDGET_S:g})",
    )
    check.add_argument(
        "--interleave",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="against a valid baseline whose server answers and is the process that was "
        "benched, probe that server and this one alternately (A B B A …) and judge the pairs, "
        "so that a change of load on either machine meanwhile shifts both alike: the default "
        "where possible, else check says why and uses the stored baseline's runs (a warning "
        "with --interleave); --no-interleave: always the stored baseline's runs",
    )
    add_max_age(check)
    check.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="say each step on stderr as it goes (reading, baseline, each probe): the default "
        "when stderr is a terminal; stdout and --json are the same either way",
    )
    check.add_argument(
        "--json", action="store_true", help=f"print one JSON object (schema {CHECK_SCHEMA})"
    )
    add_db(check)
    add_gpu_metrics(check)
    add_metrics_url(check)
    add_connection(check)
    check.set_defaults(run=run, failure_exit=EXIT_UNREACHABLE, store_exit=EXIT_STORE)
    # None: not given, so a baseline's protocol decides without a word (`run_check`).
    takes(check, probe_tokens=None, probe_prompts=None, max_age=DEFAULT_MAX_AGE_S)


def run(args: argparse.Namespace) -> int:
    """Run the check, with the store's baselines: the store is read, never created; a missing
    default store means none saved yet, one that cannot be read is `EXIT_STORE`."""
    try:
        store: Store | None = open_store(args, create=False)
    except StoreMissing:
        if store_setting(args):
            raise
        store = None  # nothing saved on this machine yet: no baseline to look up
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    progress = CheckProgress(show)
    try:
        return stopping.run(_check(args, store, progress))
    except KeyboardInterrupt:
        args.interrupted = progress.interrupted()  # said by `specmon.cli.main`
        raise
    finally:
        if store is not None:
            store.close()


async def _check(args: argparse.Namespace, store: Store | None, progress: CheckProgress) -> int:
    target = target_of(args)

    # The store's baseline is the session's choice, as the dashboard's is; every candidate's
    # server is read first: the rule prefers valid baselines to newer.
    session = CheckSession(
        target, store, pin=pin_of(args.baseline), tokens=args.probe_tokens, max_age_s=args.max_age
    )

    async def run_probe(protocol: Protocol) -> Snapshot:
        return await take_snapshot(
            target,
            protocol,
            kind=SnapshotKind.RUN,
            gpu_metrics=args.gpu_metrics,
            again=lambda line: print(f"specmon: {line}", file=sys.stderr, flush=True),
        )

    async def probe_baseline(url: str, protocol: Protocol) -> Snapshot:
        return await take_snapshot(
            target.at(url),
            protocol,
            kind=SnapshotKind.RUN,
            gpu_metrics=args.gpu_metrics,
            again=lambda line: print(f"specmon: {url}: {line}", file=sys.stderr, flush=True),
        )

    progress.reading(target.url)
    telemetry = await open_telemetry(target.url, gpu_metrics=args.gpu_metrics)
    try:
        async with open_connection(target, make_client) as connection:
            report = await run_check(
                connection,
                target.url,
                run_probe=progress.probing(run_probe),
                check_lifetime=session.baseline_lifetime,
                find_baseline=session.first_info,
                probe_tokens=args.probe_tokens,
                max_age_s=args.max_age,
                gpu=telemetry.read,
                earlier=lambda: store.list() if store else [],
                budget_s=args.budget,
                prompts=probe_prompts_arg(args.probe_prompts),
                find_ab=lambda info: (
                    lookup_ab(store, info, max_age_s=args.max_age) if store else None
                ),
                probe_baseline=progress.probing_baseline(probe_baseline),
                interleave=args.interleave,
                steps=progress,
            )
    finally:
        await telemetry.aclose()
    progress.finished()
    if args.json:
        print(json.dumps(report_to_dict(report), indent=2))
    else:
        marks = {"ok": "✓", "info": "·", "warn": "!", "fail": "✗"}
        for finding in report.findings:
            print(f"{marks[finding.level]} {finding.text}")
    return report.exit_code
