"""`specmon ab [options] -- <server command>`: the managed A/B of a speculative server against
the same server without speculation, at each load asked for."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from specmon.analysis.ab_runs import Side, judged
from specmon.analysis.load import best_per_concurrency
from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.cli import launch, monitor, stopping
from specmon.cli.ab_report import (
    AB_SCHEMA,
    best_lines,
    report_to_dict,
    split_lines,
    table_lines,
)
from specmon.cli.bench import note, report_unsaved
from specmon.cli.common import (
    EXIT_INTERRUPTED,
    add_connection,
    add_db,
    count,
    open_store,
    positive_int,
    takes,
    target_of,
    tokens,
)
from specmon.cli.launch import add_launch_options
from specmon.errors import TargetError
from specmon.launch.ab import AbEvents, AbPlan, run_ab
from specmon.launch.ab import target_for as launched_target
from specmon.launch.llamacpp_help import read_plain_words
from specmon.launch.split import KINDS, Split, command_argv, rules_for, server_kind, split_command
from specmon.launch.sweep import Variant, parse_axes, variants
from specmon.measure.bench import Progress
from specmon.model import Protocol
from specmon.probe_prompts import DEFAULT_MAX_TOKENS, DEFAULT_PROMPT
from specmon.reports.bench_text import run_line
from specmon.storage.saving import save_or_keep
from specmon.storage.store import Store
from specmon.storage.unsaved import Unsaved
from specmon.wording import crossover_line


def concurrency_list(text: str) -> tuple[int, ...]:
    """`1,4,16` -> (1, 4, 16): distinct positive integers, in increasing order."""
    try:
        values = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError(f"concurrencies must be positive integers: {text!r}")
    return tuple(values)


def register(commands: Any) -> None:
    """Add the `ab` subcommand."""
    ab = commands.add_parser(
        "ab",
        help="launch a speculative server and its baseline in turn and compare them under load",
        description="Derives the baseline command (the server command minus its speculative "
        "flags, with the settings SGLang changes for speculation pinned on both), then runs "
        "ABAB rounds: each launches the baseline, then the speculative server, one at a time, "
        "and benches each at every concurrency. Prints a table per concurrency and the "
        "crossover, and saves every bench as a snapshot once all are complete. Each round's "
        "pairs are judged at their own time: --max-age (default 1800 s) is how long before a "
        "speculative bench its round's baseline may have been taken. "
        "A store locked by another process is waited for (up to 10 min; Ctrl-C stops "
        "waiting); an A/B the store cannot take is kept in a file for `specmon snapshots "
        "import`, never discarded. Exit 0 done, 1 failed or not saved (kept in a file), "
        "2 bad arguments, 130 interrupted.",
        allow_abbrev=False,
    )
    ab.add_argument(
        "--concurrency",
        type=concurrency_list,
        default=(1,),
        metavar="N,N…",
        help="streams at once, one bench per level (default 1), e.g. 1,4,16",
    )
    ab.add_argument(
        "--rounds",
        type=positive_int,
        default=3,
        help="ABAB rounds (default 3; fewer give a tentative verdict)",
    )
    ab.add_argument("--runs", type=positive_int, default=3, help="timed runs per bench (default 3)")
    ab.add_argument("--warmup", type=count, default=1, help="warm-up runs (default 1)")
    ab.add_argument(
        "--max-tokens",
        type=tokens,
        default=DEFAULT_MAX_TOKENS,
        help=f"tokens per stream (default {DEFAULT_MAX_TOKENS})",
    )
    ab.add_argument("--prompt", default=DEFAULT_PROMPT, help="prompt text (default: built in)")
    ab.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="AXIS=N,N…",
        help="try each speculative configuration (repeatable; their product): SGLang steps=, "
        "topk=, draft-tokens=; vLLM tokens=; llama.cpp draft-max=",
    )
    add_launch_options(ab)
    ab.add_argument(
        "--dry-run", action="store_true", help="print the two commands and the pins; launch none"
    )
    ab.add_argument(
        "--json", action="store_true", help=f"print one JSON object (schema {AB_SCHEMA})"
    )
    ab.add_argument(
        "--watch",
        action="store_true",
        help="instead of the A/B, launch the speculative server and open the dashboard on it "
        "(as `specmon launch`): b relaunches it without speculation for the baseline",
    )
    launch.add_server_command(ab)
    add_db(ab, config=False)  # its --config is the dashboard's, below
    add_connection(ab)
    dashboard = monitor.add_settings(ab, "live dashboard, with --watch (before or after `ab`)")
    takes(ab, **{action.dest: None for action in dashboard})
    ab.set_defaults(
        run=run,
        interrupted="the A/B did not complete: nothing saved",
        # --max-age judges the A/B's pairs too; the others are the dashboard's alone.
        watch_only={a.dest: a.option_strings[-1] for a in dashboard if a.dest != "max_age"},
    )


def split_of(args: argparse.Namespace) -> Split:
    """The server command after `--`, split (SGLang's own parser for SGLang when it loads).

    Raises:
        TargetError: No command, or one specmon cannot split.
    """
    command = list(args.server_command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise TargetError("give the speculative server's command after --")
    kind = server_kind(command)
    plain: tuple[str, ...] = ()
    notes: list[str] = []
    if KINDS[kind].plain_by_help:
        plain, unread = read_plain_words(command_argv(command))
        notes = [unread] if unread else []
        if plain:
            notes.append(
                f"this llama-server build speculates by default (its --help): the "
                f"baseline adds {' '.join(plain)}"
            )
    return split_command(command, os.environ, rules_for(kind), plain=plain, notes=notes)


def run(args: argparse.Namespace) -> int:
    """Split the command, then (unless --dry-run) run the A/B and save it."""
    if args.watch:
        return launch.run(args)
    for dest, flag in args.watch_only.items():
        if getattr(args, dest) is not None:
            raise TargetError(f"{flag} is the dashboard's: give it with --watch, or leave it out")
    split = split_of(args)
    out = sys.stderr if args.json else sys.stdout
    for line in split_lines(split):
        print(line, file=out)
    found: list[Variant] = []
    skipped: list[str] = []
    if args.sweep:
        found, skipped = variants(split, parse_axes(args.sweep, split.kind))
        for line in skipped:
            print(f"Sweep: skipped {line}", file=out)
        if not found:
            raise TargetError(
                "every configuration of the sweep was skipped (each with its reason above): "
                "nothing to run"
            )
        print(f"Sweep: {', '.join(v.label for v in found)}", file=out)
    if args.dry_run:
        return 0
    plan = AbPlan(
        split=split,
        target=launched_target(split, target_of(args, "http://127.0.0.1")),
        protocol=Protocol(args.runs, args.warmup, args.max_tokens, 0.0, args.prompt),
        concurrencies=args.concurrency,
        rounds=args.rounds,
        health_timeout_s=args.health_timeout,
        logs=Path(args.logs).expanduser() if args.logs else None,
        variants=tuple(found),
    )
    with open_store(args) as store:
        return stopping.run(_ab(args, plan, store, skipped))


async def _ab(args: argparse.Namespace, plan: AbPlan, store: Store, skipped: list[str]) -> int:
    out = sys.stderr if args.json else sys.stdout
    sides = (
        f"baseline then {len(plan.variants)} configurations"
        if plan.variants
        else ("baseline then speculative")
    )
    print(
        f"Plan: {plan.rounds} round(s) of {sides}, at "
        f"{', '.join(map(str, plan.concurrencies))} stream(s): {args.warmup} warm-up + "
        f"{args.runs} runs × {args.max_tokens} tokens per stream, at {plan.target.url}",
        file=out,
        flush=True,
    )

    def progress(side: Side, concurrency: int, p: Progress) -> None:
        if p.phase == "run" and p.index % concurrency == 0:  # one line per batch
            phase = f"{side} ×{concurrency}"
            print(run_line(p.index, p.total, p.figures, phase), file=out, flush=True)

    said: set[str] = set()

    def say(line: str) -> None:
        if line.startswith("GPUs:") and line in said:  # the same for every bench of an A/B
            return
        said.add(line)
        print(line, file=out, flush=True)

    runs = await run_ab(plan, AbEvents(say=say, progress=progress))
    per_config = judged(runs, max_age_s=DEFAULT_MAX_AGE_S if args.max_age is None else args.max_age)
    for config, found, cross in per_config:
        if config is not None:
            print(f"Configuration {config}:", file=out)
        for line in [*table_lines(found, terminal_width(out)), crossover_line(cross)]:
            print(line, file=out)
    best = []
    if plan.variants:
        best = best_per_concurrency([(c or "", found) for c, found, _ in per_config])
        for line in best_lines(best):
            print(line, file=out)
    # All or none; a lock is waited for (Ctrl-C: the way out), and an A/B the store cannot take
    # is kept in a file for `specmon snapshots import`: never discarded.
    outcome = await save_or_keep(store, Unsaved.of_ab(runs), say=note)
    ids = outcome.ids or []
    if ids:
        print(f"Saved {len(ids)} snapshots ({ids[0]}–{ids[-1]}) to {store.path}", file=out)
    if args.json:  # the report is whole either way; snapshot_ids lists what the store took
        print(json.dumps(report_to_dict(plan.split, per_config, best, ids, skipped), indent=2))
    if not outcome.saved:
        return report_unsaved(outcome)
    return EXIT_INTERRUPTED if outcome.interrupted else 0


def terminal_width(out: Any) -> int | None:
    """The columns of the terminal `out` writes to; None into a file or a pipe (every column of
    the table: a script reads them all)."""
    isatty = getattr(out, "isatty", None)
    if isatty is None or not isatty():
        return None
    return shutil.get_terminal_size().columns
