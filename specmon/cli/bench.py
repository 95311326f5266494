"""`specmon bench URL`: warm-up + N streamed runs, one line each, a summary, a saved snapshot;
with `--probe-prompts`, that for each category in turn, a snapshot each."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from specmon.analysis.gpus import describe_gpu_state
from specmon.cli import stopping
from specmon.cli.agent import add_gpu_metrics
from specmon.cli.common import (
    EXIT_INTERRUPTED,
    add_connection,
    add_db,
    add_metrics_url,
    count,
    open_store,
    positive_int,
    probe_prompts_arg,
    takes,
    target_of,
    tokens,
)
from specmon.errors import TargetError
from specmon.measure.bench import Progress
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, ServerInfo, Snapshot
from specmon.probe_prompts import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_PROMPT,
    ProbePrompt,
    Rotation,
    prompt_protocol,
)
from specmon.reports.bench_text import category_line, run_line, summary_lines, target_line
from specmon.storage.saving import Outcome, save_or_keep
from specmon.storage.serialize import SCHEMA, snapshot_to_dict
from specmon.storage.store import Store
from specmon.storage.unsaved import Unsaved


def register(commands: Any) -> None:
    """Add the `bench` subcommand."""
    bench = commands.add_parser(
        "bench",
        help="benchmark a server: warm-up + N streamed runs, saved as a snapshot",
        description="Warm-up runs, then N timed streaming runs at temperature 0 with "
        "ignore_eos; prints one line per run and a summary, and saves the snapshot. "
        "A store locked by another process is waited for (up to 10 min; Ctrl-C stops "
        "waiting); a result the store cannot take is kept in a file for `specmon snapshots "
        "import`. Exit 0 saved, 1 failed or not saved (kept in a file), 2 bad arguments, "
        "130 interrupted.",
        allow_abbrev=False,
    )
    bench.add_argument(
        "server", metavar="URL", help="server address, e.g. http://10.1.230.174:8000"
    )
    bench.add_argument("--runs", type=positive_int, default=5, help="timed runs (default 5)")
    bench.add_argument("--warmup", type=count, default=1, help="warm-up runs (default 1)")
    bench.add_argument(
        "--max-tokens",
        type=tokens,
        default=DEFAULT_MAX_TOKENS,
        help=f"tokens per run (default {DEFAULT_MAX_TOKENS}: the dashboard's probe, check's and "
        "whatif's, so that a baseline benched with it applies on every surface)",
    )
    bench.add_argument("--label", help="a label stored with the snapshot")
    bench.add_argument("--prompt", default=DEFAULT_PROMPT, help="prompt text (default: built in)")
    bench.add_argument(
        "--probe-prompts",
        default=argparse.SUPPRESS,
        metavar="builtin|FILE",
        help="bench each category of these prompts in turn instead of --prompt ('builtin': "
        "code, chat, math, summarisation, repetitive; or a JSONL file as the dashboard's), "
        "one snapshot per category, labelled with it",
    )
    bench.add_argument(
        "--json", action="store_true", help=f"print one JSON object (schema {SCHEMA})"
    )
    add_db(bench)
    add_gpu_metrics(bench)
    add_metrics_url(bench)
    add_connection(bench)
    bench.set_defaults(run=run, interrupted="the bench did not complete: nothing saved")
    takes(bench, probe_prompts=None)


def run(args: argparse.Namespace) -> int:
    """Run the bench and save it; the store is opened first so a bad one fails fast."""
    with open_store(args) as store:
        return stopping.run(_bench(args, store))


async def _bench(args: argparse.Namespace, store: Store) -> int:
    prompts = probe_prompts_arg(args.probe_prompts)
    if not prompts:
        exit_code, snapshot, snapshot_id = await _bench_one(args, store, None)
        if args.json:
            print(json.dumps(_body(snapshot, snapshot_id), indent=2))
        return exit_code
    if args.prompt != DEFAULT_PROMPT:
        raise TargetError("give either --prompt or --probe-prompts, not both")
    rotation = Rotation(prompts)
    results: list[tuple[ProbePrompt, Snapshot, int | None]] = []
    exit_code = 0
    for _ in rotation.categories:  # each category's first prompt
        prompt = rotation.next()
        code, snapshot, snapshot_id = await _bench_one(args, store, prompt)
        results.append((prompt, snapshot, snapshot_id))
        if code == EXIT_INTERRUPTED:  # Ctrl-C while its save waited: stop there
            return code
        exit_code = max(exit_code, code)
    out = sys.stderr if args.json else sys.stdout
    print("By category (pooled runs of each):", file=out)
    for prompt, snapshot, snapshot_id in results:
        print(category_line(prompt.category, snapshot, snapshot_id), file=out)
    if args.json:
        categories = [
            {"category": prompt.category, **_body(snapshot, snapshot_id)}
            for prompt, snapshot, snapshot_id in results
        ]
        print(json.dumps({"schema": SCHEMA, "categories": categories}, indent=2))
    return exit_code


def _body(snapshot: Snapshot, snapshot_id: int | None) -> dict[str, Any]:
    body = snapshot_to_dict(snapshot)
    body["snapshot_id"] = snapshot_id
    return body


async def _bench_one(
    args: argparse.Namespace, store: Store, prompt: ProbePrompt | None
) -> tuple[int, Snapshot, int | None]:
    """One bench of a category's `prompt` (None: `--prompt`), printed and saved (labelled with
    its category when it has one): the exit code, the snapshot, its id when saved."""
    target = target_of(args)
    protocol = Protocol(args.runs, args.warmup, args.max_tokens, 0.0, args.prompt)
    category = None
    if prompt is not None:
        protocol, category = prompt_protocol(protocol, prompt), prompt.category
    label = args.label if category is None else " · ".join(filter(None, [args.label, category]))
    out = sys.stderr if args.json else sys.stdout

    def progress(p: Progress) -> None:
        phase = "Warm-up" if p.phase == "warmup" else "Run"
        print(run_line(p.index, p.total, p.figures, phase), file=out, flush=True)

    def connected(info: ServerInfo) -> None:
        print(f"Benchmarking {target.url}: {target_line(info)}", file=out)
        if target.metrics_urls:
            workers = ", ".join(target.metrics_urls)
            print(f"Server info and /metrics from its workers: {workers}", file=out)
        print(
            f"Protocol: {protocol.warmup} warm-up + {protocol.runs} runs × "
            f"{protocol.max_tokens} tokens, temperature {protocol.temperature:g}, ignore_eos"
            + (f", category {category}" if category else ""),
            file=out,
            flush=True,
        )

    snapshot = await take_snapshot(
        target,
        protocol,
        kind=SnapshotKind.RUN,
        label=label,
        gpu_metrics=args.gpu_metrics,
        on_connect=connected,
        on_progress=progress,
        say=lambda line: print(line, file=out, flush=True),
    )
    info = snapshot.server
    for line in summary_lines(snapshot):
        print(line, file=out)
    if snapshot.gpu is not None:
        print(f"GPU state: {describe_gpu_state(snapshot.gpu)}", file=out)
    # A lock is waited for (Ctrl-C: the way out); what the store cannot take is kept in a file.
    outcome = await save_or_keep(store, Unsaved((snapshot,)), say=note)
    if not outcome.saved:
        return report_unsaved(outcome), snapshot, None
    assert outcome.ids is not None
    snapshot_id = outcome.ids[0]
    kind = "baseline (speculation off)" if info.speculative is None else "speculative run"
    print(f"Saved snapshot {snapshot_id}, a {kind}, to {store.path}", file=out)
    return EXIT_INTERRUPTED if outcome.interrupted else 0, snapshot, snapshot_id


def note(line: str) -> None:
    """A line of progress on stderr (a save waiting for the store's lock)."""
    print(f"specmon: {line}", file=sys.stderr, flush=True)


def report_unsaved(outcome: Outcome) -> int:
    """Say where a result the store did not take is (on stderr); the exit code: 130 when the
    way out was taken, else 1. With no file written either, the result follows as JSON."""
    print(f"specmon: error: {outcome.message()}", file=sys.stderr)
    if outcome.text is not None:
        print(
            "specmon: the result follows as JSON: save it to a file and run "
            "specmon snapshots import FILE",
            file=sys.stderr,
        )
        print(outcome.text, file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED if outcome.interrupted else 1
