"""`specmon snapshots list|show|compare|export|import`: read the snapshot store (and `import`:
put results kept in files into it, `cli.snapshots_import`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from specmon.analysis.pooled import pool
from specmon.analysis.validity import DEFAULT_MAX_AGE_S, LifetimeCheck, snapshot_validity
from specmon.cli import snapshots_import
from specmon.cli.common import (
    add_connection,
    add_db,
    add_max_age,
    open_store,
    positive_int,
    probe_prompts_arg,
    store_setting,
    takes,
    target_of,
)
from specmon.errors import SpecmonError, TargetError
from specmon.model import Snapshot
from specmon.reports.bench_text import run_line, summary_lines, target_line
from specmon.reports.compare_report import compare_holds, compare_text
from specmon.reports.snapshot_table import (
    ExportFormat,
    baseline_candidates,
    comparison_rows,
    export,
    lifetime_for,
)
from specmon.safe_text import safe_text
from specmon.session.baselines import check_lifetimes
from specmon.storage.private_files import write_private
from specmon.storage.serialize import snapshot_to_dict
from specmon.storage.store import Store, StoreMissing, default_db_path
from specmon.target import normalise_url
from specmon.wording import num


def register(commands: Any) -> None:
    """Add the `snapshots` subcommand and its actions."""
    snapshots = commands.add_parser("snapshots", help="read the snapshot store", allow_abbrev=False)
    add_db(snapshots)
    actions = snapshots.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list snapshots, newest first")
    listing.add_argument("--url", dest="only_url", metavar="URL", help="only this server")
    show = actions.add_parser("show", help="one snapshot with its runs")
    show.add_argument("id", type=positive_int, metavar="ID")
    show.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    compare = actions.add_parser("compare", help="a baseline against a speculative snapshot")
    compare.add_argument("base", type=positive_int, metavar="BASE_ID")
    compare.add_argument("spec", type=positive_int, metavar="SPEC_ID")
    export_ = actions.add_parser("export", help="the comparison table of each server's snapshots")
    export_.add_argument(
        "--format",
        choices=FORMATS,
        help="md (for people), csv or json (for scripts: numbers and true/false); default: "
        "from the suffix of --output, else md",
    )
    export_.add_argument(
        "--url", dest="only_url", metavar="URL", help="only this server (default: every server)"
    )
    export_.add_argument(
        "--output",
        "-o",
        metavar="PATH",
        help="write here instead of stdout (.md, .csv or .json says the format)",
    )
    export_.add_argument(
        "--probe-prompts",
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="name the category of snapshots benched with this JSONL file's prompts too (the "
        "built-in set's and the default prompt's are always named)",
    )
    takes(export_, probe_prompts=None)
    import_ = snapshots_import.register(actions)
    # The shared options go before or after the action too; an action that does not take one
    # (--max-age for list and show) refuses it wherever it was given (common.apply_shared).
    for parser in (snapshots, compare, export_):
        add_max_age(parser)
    for parser in (compare, export_):
        takes(parser, max_age=DEFAULT_MAX_AGE_S)
        parser.add_argument(
            "--offline",
            action="store_true",
            help="do not contact the baseline servers to check they did not restart "
            "(their lifetime is then reported unverified)",
        )
        add_connection(parser)
    for parser in (listing, show, compare, export_, import_):
        add_db(parser)
    snapshots.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Open the store (never creating it, unless importing into it) and carry out the action."""
    if args.action == "import":
        with open_store(args) as store:
            return snapshots_import.run(store, args.files)
    try:
        store = open_store(args, create=False)
    except StoreMissing:
        if store_setting(args) or args.action != "list":
            raise
        print(f"No snapshots: none saved yet ({default_db_path()} does not exist)")
        return 0
    with store:
        return _snapshots(args, store)


def _snapshots(args: argparse.Namespace, store: Store) -> int:
    if args.action == "list":
        items = store.list(normalise_url(args.only_url) if args.only_url else None)
        if not items:
            print(f"No snapshots in {store.path}")
        else:
            width = max(len(s.url) for s in items)
            print(LIST_HEADER.format(url="server", width=width))
        for s in items:
            _say(snapshot_row(s, width))
        for message in store.skipped:
            print(f"specmon: warning: {message}", file=sys.stderr)
        return 0
    if args.action == "show":
        snapshot = store.get(args.id)
        if args.json:
            print(json.dumps(snapshot_to_dict(snapshot), indent=2))
            return 0
        _say(f"Snapshot {snapshot.id}: {snapshot.url} · {target_line(snapshot.server)}")
        _say(
            f"Taken {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(snapshot.created_at))}"
            + (f" · label {snapshot.label!r}" if snapshot.label else "")
        )
        for i, run in enumerate(snapshot.runs, 1):
            _say(run_line(i, len(snapshot.runs), run))
        for line in summary_lines(snapshot):
            _say(line)
        return 0
    if args.action == "compare":
        base, spec = store.get(args.base), store.get(args.spec)
        # The pair given is pinned: judged as the export judges its row (`stored_choice`).
        lifetime = lifetime_for(base, spec, _lifetimes(args, [base]))
        _say(compare_text(base, spec, max_age_s=args.max_age, lifetime=lifetime))
        validity = snapshot_validity(base, spec, max_age_s=args.max_age, lifetime=lifetime)
        return 0 if compare_holds(base, spec, validity) else 1
    fmt = export_format(args.format, args.output)
    every = store.list()
    wanted = normalise_url(args.only_url) if args.only_url else None
    items = sorted(  # oldest first, as taken (by server it read 2, 3, 1)
        (s for s in every if wanted is None or s.url == wanted), key=lambda s: (s.created_at, s.id)
    )
    rows = comparison_rows(
        items,
        candidates=every,
        max_age_s=args.max_age,
        # Every candidate's server, read once: the rule prefers valid baselines to newer ones.
        lifetimes=_lifetimes(args, baseline_candidates(items, every)),
        prompts=probe_prompts_arg(args.probe_prompts),
    )
    text = export(rows, fmt)
    if args.output:
        path = Path(args.output).expanduser()
        try:
            write_private(path, text)
        except OSError as exc:
            raise SpecmonError(f"cannot write {path}: {exc.strerror}") from None
        print(f"Wrote {len(rows)} rows to {path.resolve()}")
    else:
        _say(text.removesuffix("\n"))
    return 0


def _say(text: str) -> None:
    """Print lines made of stored snapshots: each line's text safe (`safe_text`), again on the
    way out, whatever the store holds."""
    print("\n".join(safe_text(line, limit=None) for line in text.split("\n")))


FORMATS: tuple[ExportFormat, ...] = ("md", "csv", "json")


def export_format(given: str | None, output: str | None) -> ExportFormat:
    """The export's format: `--format`, else the suffix of `--output`, else Markdown.

    Raises:
        TargetError: The suffix names another format than `--format`, or none of them when
            `--format` is not given.
    """
    suffix = Path(output).suffix.lower().lstrip(".") if output else ""
    implied = next((fmt for fmt in FORMATS if fmt == suffix), None)
    if given is None:
        if output and implied is None:
            raise TargetError(
                f"cannot tell the format of {output} from its suffix: name it .md, .csv or "
                ".json, or give --format"
            )
        return implied or "md"
    if implied is not None and implied != given:
        raise TargetError(f"--format {given} does not match {output}: its suffix says {implied}")
    return cast(ExportFormat, given)


def _lifetimes(
    args: argparse.Namespace, baselines: Iterable[Snapshot]
) -> Mapping[int, LifetimeCheck]:
    """The baseline servers' lifetime checks, unless --offline."""
    chosen = [b for b in baselines if b.server.speculative is None]
    if args.offline or not chosen:
        return {}
    return asyncio.run(check_lifetimes(chosen, target_of(args, chosen[0].url)))


LIST_HEADER = (
    f"{'id':>5}  {'taken':<16}  {{url:<{{width}}}}  {'speculation':<28} {'decode':>12}  runs"
)
"""The header of `snapshots list`: `.format(url="server", width=…)`, the widest address."""


def snapshot_row(s: Snapshot, url_width: int = 0) -> str:
    """One line of `snapshots list`, its address padded to `url_width`."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created_at))
    tok_s = f"{num(pool(s.runs).decode_tok_s)} tok/s"
    spec = s.server.speculative.describe() if s.server.speculative else "baseline"
    label = f"  {s.label}" if s.label else ""
    url = f"{s.url:<{url_width}}"
    return f"{s.id:>5}  {when}  {url}  {spec:<28} {tok_s:>12}  {len(s.runs)} runs{label}"
