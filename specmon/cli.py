"""Command line: `specmon bench|check|snapshots|demo`.

Every failure prints one line naming its cause (never a traceback) and exits non-zero.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from specmon import __version__
from specmon.analysis.validity import DEFAULT_MAX_AGE_S, fingerprint
from specmon.bench import Progress, run_bench
from specmon.check import DEFAULT_CHECK_TOKENS, report_to_dict, run_check
from specmon.errors import SpecmonError, TargetError
from specmon.exports import compare_text, comparison_rows, export
from specmon.model import Protocol, ServerInfo, Snapshot
from specmon.render import run_line, summary_lines, target_line
from specmon.serialize import snapshot_to_dict
from specmon.sources.http import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    Target,
    load_api_key,
    make_client,
    normalise_url,
)
from specmon.sources.probe import DEFAULT_PROMPT
from specmon.sources.sglang import fetch_server_info
from specmon.store import Store, default_db_path

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def _tokens(text: str) -> int:
    value = _positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError("need at least 2 tokens to measure decode speed")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0 and 3600 seconds: {text}")
    return value


class _RefuseApiKeyOnCommandLine(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.error(
            "--api-key is refused: a key on the command line shows in the process list. "
            f"Use {DEFAULT_API_KEY_ENV}=…, --api-key-env NAME or --api-key-file PATH"
        )


def _add_connection(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--api-key-env",
        metavar="NAME",
        help=f"environment variable holding the API key (default {DEFAULT_API_KEY_ENV})",
    )
    group.add_argument("--api-key-file", metavar="PATH", help="file holding the API key")
    group.add_argument(
        "--api-key", nargs="?", help=argparse.SUPPRESS, action=_RefuseApiKeyOnCommandLine
    )
    group.add_argument(
        "--insecure", action="store_true", help="do not verify the server's TLS certificate"
    )
    group.add_argument(
        "--connect-timeout",
        type=_seconds,
        default=DEFAULT_CONNECT_TIMEOUT,
        metavar="S",
        help=f"seconds to wait for a connection (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    group.add_argument(
        "--read-timeout",
        type=_seconds,
        default=DEFAULT_READ_TIMEOUT,
        metavar="S",
        help=f"seconds to wait for each read (default {DEFAULT_READ_TIMEOUT:g})",
    )


def _add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", metavar="PATH", help=f"snapshot store (default {default_db_path()})"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="specmon",
        description="Live monitor for speculative-decoding LLM servers (SGLang).",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"specmon {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    bench = commands.add_parser(
        "bench",
        help="benchmark a server: warm-up + N streamed runs, saved as a snapshot",
        description="Warm-up runs, then N timed streaming runs at temperature 0 with "
        "ignore_eos; prints one line per run and a summary, and saves the snapshot.",
        allow_abbrev=False,
    )
    bench.add_argument("url", metavar="URL", help="server address, e.g. http://10.1.230.174:8000")
    bench.add_argument("--runs", type=_positive_int, default=5, help="timed runs (default 5)")
    bench.add_argument("--warmup", type=_count, default=1, help="warm-up runs (default 1)")
    bench.add_argument(
        "--max-tokens", type=_tokens, default=500, help="tokens per run (default 500)"
    )
    bench.add_argument("--label", help="a label stored with the snapshot")
    bench.add_argument("--prompt", default=DEFAULT_PROMPT, help="prompt text (default: built in)")
    bench.add_argument("--json", action="store_true", help="print one JSON object (schema 1)")
    _add_db(bench)
    _add_connection(bench)

    check = commands.add_parser(
        "check",
        help="triage a server: exit 0 healthy, 1 degraded, 2 unreachable or refused",
        description="Reachability, version, auth, metrics, speculation, one short probe and, "
        "with a valid baseline in the store, the speedup and break-even. "
        "Exit 0 healthy, 1 degraded, 2 unreachable or refused.",
        allow_abbrev=False,
    )
    check.add_argument("url", metavar="URL", help="server address")
    check.add_argument(
        "--probe-tokens",
        type=_tokens,
        default=DEFAULT_CHECK_TOKENS,
        help=f"probe size when no baseline sets it (default {DEFAULT_CHECK_TOKENS})",
    )
    check.add_argument(
        "--max-age",
        type=_seconds,
        default=DEFAULT_MAX_AGE_S,
        metavar="S",
        help=f"baselines older than this are stale (default {DEFAULT_MAX_AGE_S:g} s)",
    )
    check.add_argument("--json", action="store_true", help="print one JSON object")
    _add_db(check)
    _add_connection(check)

    snapshots = commands.add_parser("snapshots", help="read the snapshot store", allow_abbrev=False)
    _add_db(snapshots)
    actions = snapshots.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list snapshots, newest first")
    listing.add_argument("--url", help="only this server")
    show = actions.add_parser("show", help="one snapshot with its runs")
    show.add_argument("id", type=_positive_int, metavar="ID")
    show.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    compare = actions.add_parser("compare", help="a baseline against a speculative snapshot")
    compare.add_argument("base", type=_positive_int, metavar="BASE_ID")
    compare.add_argument("spec", type=_positive_int, metavar="SPEC_ID")
    compare.add_argument(
        "--max-age", type=_seconds, default=DEFAULT_MAX_AGE_S, metavar="S",
        help=f"baselines older than this are stale (default {DEFAULT_MAX_AGE_S:g} s)",
    )  # fmt: skip
    export = actions.add_parser("export", help="the comparison table of one server's snapshots")
    export.add_argument("--format", choices=("md", "csv", "json"), default="md")
    export.add_argument("--url", help="only this server (default: every server, one table each)")
    export.add_argument("--output", "-o", metavar="PATH", help="write here instead of stdout")
    export.add_argument(
        "--max-age", type=_seconds, default=DEFAULT_MAX_AGE_S, metavar="S",
        help=f"baselines older than this are stale (default {DEFAULT_MAX_AGE_S:g} s)",
    )  # fmt: skip

    demo = commands.add_parser(
        "demo",
        help="run a speculative and a baseline simulated SGLang server and compare them",
        allow_abbrev=False,
    )
    demo.add_argument("--runs", type=_positive_int, default=3, help="timed runs (default 3)")
    demo.add_argument(
        "--max-tokens", type=_tokens, default=200, help="tokens per run (default 200)"
    )
    return parser


def _target(args: argparse.Namespace) -> Target:
    key, warnings = load_api_key(args.api_key_env, args.api_key_file)
    for warning in warnings:
        print(f"specmon: warning: {warning}", file=sys.stderr)
    if args.insecure:
        print("specmon: warning: TLS verification is off (--insecure)", file=sys.stderr)
    return Target(
        url=normalise_url(args.url),
        api_key=key,
        connect_timeout=args.connect_timeout,
        read_timeout=args.read_timeout,
        insecure=args.insecure,
    )


def _store(args: argparse.Namespace) -> Store:
    return Store(Path(args.db).expanduser() if args.db else default_db_path())


async def _bench(args: argparse.Namespace, store: Store) -> int:
    target = _target(args)
    protocol = Protocol(args.runs, args.warmup, args.max_tokens, 0.0, args.prompt)
    out = sys.stderr if args.json else sys.stdout

    def progress(p: Progress) -> None:
        phase = "Warm-up" if p.phase == "warmup" else "Run"
        print(run_line(p.index, p.total, p.figures, phase), file=out, flush=True)

    async with make_client(target) as client:
        info = await fetch_server_info(client)
        print(f"Benchmarking {target.url}: {target_line(info)}", file=out)
        print(
            f"Protocol: {protocol.warmup} warm-up + {protocol.runs} runs × {protocol.max_tokens} "
            "tokens, temperature 0, ignore_eos",
            file=out,
            flush=True,
        )
        snapshot = await run_bench(
            client, target.url, info, protocol, label=args.label, on_progress=progress
        )
    for line in summary_lines(snapshot):
        print(line, file=out)
    exit_code = 0
    snapshot_id: int | None = None
    try:
        snapshot_id = store.save(snapshot)
    except SpecmonError as exc:  # the figures are printed above and below: nothing lost
        print(f"specmon: error: could not save the snapshot: {exc}", file=sys.stderr)
        exit_code = 1
    else:
        kind = "baseline (speculation off)" if info.speculative is None else "speculative run"
        print(f"Saved snapshot {snapshot_id}, a {kind}, to {store.path}", file=out)
    if args.json:
        body = snapshot_to_dict(snapshot)
        body["snapshot_id"] = snapshot_id
        print(json.dumps(body, indent=2))
    return exit_code


async def _check(args: argparse.Namespace, store: Store | None) -> int:
    target = _target(args)

    def find_baseline(info: ServerInfo) -> Snapshot | None:
        return store.latest_baseline(fingerprint(info.args)) if store else None

    async with make_client(target) as client:
        report = await run_check(
            client,
            target.url,
            find_baseline=find_baseline,
            probe_tokens=args.probe_tokens,
            max_age_s=args.max_age,
        )
    if args.json:
        print(json.dumps(report_to_dict(report), indent=2))
    else:
        marks = {"ok": "✓", "info": "·", "warn": "!", "fail": "✗"}
        for finding in report.findings:
            print(f"{marks[finding.level]} {finding.text}")
    return report.exit_code


def _snapshots(args: argparse.Namespace, store: Store) -> int:
    now = time.time()
    if args.action == "list":
        items = store.list(normalise_url(args.url) if args.url else None)
        if not items:
            print(f"No snapshots in {store.path}")
        for s in items:
            print(snapshot_row(s))
        for message in store.skipped:
            print(f"specmon: warning: {message}", file=sys.stderr)
        return 0
    if args.action == "show":
        snapshot = store.get(args.id)
        if args.json:
            print(json.dumps(snapshot_to_dict(snapshot), indent=2))
            return 0
        print(f"Snapshot {snapshot.id}: {snapshot.url} · {target_line(snapshot.server)}")
        print(f"Taken {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(snapshot.created_at))}"
              + (f" · label {snapshot.label!r}" if snapshot.label else ""))  # fmt: skip
        for i, run in enumerate(snapshot.runs, 1):
            print(run_line(i, len(snapshot.runs), run))
        for line in summary_lines(snapshot):
            print(line)
        return 0
    if args.action == "compare":
        print(compare_text(store.get(args.base), store.get(args.spec), now=now,
                           max_age_s=args.max_age))  # fmt: skip
        return 0
    items = store.list(normalise_url(args.url) if args.url else None)
    by_url: dict[str, list[Snapshot]] = {}
    for s in items:
        by_url.setdefault(s.url, []).append(s)
    rows = [
        row
        for group in by_url.values()
        for row in comparison_rows(group, now=now, max_age_s=args.max_age)
    ]
    text = export(rows, args.format)
    if args.output:
        path = Path(args.output).expanduser()
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise SpecmonError(f"cannot write {path}: {exc.strerror}") from None
        print(f"Wrote {len(rows)} rows to {path.resolve()}")
    else:
        print(text, end="" if text.endswith("\n") else "\n")
    return 0


def snapshot_row(s: Snapshot) -> str:
    """One line of `snapshots list`."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.created_at))
    decode = [r.decode_tok_s for r in s.runs if r.decode_tok_s is not None]
    tok_s = f"{sorted(decode)[len(decode) // 2]:.1f} tok/s" if decode else "— tok/s"
    spec = s.server.speculative.describe() if s.server.speculative else "baseline"
    label = f"  {s.label}" if s.label else ""
    return f"{s.id:>5}  {when}  {s.url}  {spec:<28} {tok_s:>12}  {len(s.runs)} runs{label}"


async def _demo(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from tempfile import TemporaryDirectory

    from specmon.sim import SimConfig, SimServer

    spec_config = SimConfig()
    base_config = replace(
        spec_config,
        speculative_algorithm=None,
        speculative_num_steps=None,
        speculative_eagle_topk=None,
        speculative_num_draft_tokens=None,
        speculative_draft_model_path=None,
    )
    protocol = Protocol(args.runs, 1, args.max_tokens, 0.0, DEFAULT_PROMPT)
    print("specmon demo: two simulated SGLang servers, the same flags but for speculation.")
    print("The live dashboard replaces this walk-through in a later release.\n")
    servers = [SimServer(base_config), SimServer(spec_config)]
    snapshots: list[Snapshot] = []
    with TemporaryDirectory(prefix="specmon-demo-") as tmp, Store(Path(tmp) / "demo.db") as store:
        try:
            for server in servers:
                await server.start()
            for server in servers:
                target = Target(url=server.url)
                async with make_client(target) as client:
                    info = await fetch_server_info(client)
                    print(f"{server.url}: {target_line(info)}")

                    def progress(p: Progress) -> None:
                        phase = "Warm-up" if p.phase == "warmup" else "Run"
                        print("  " + run_line(p.index, p.total, p.figures, phase), flush=True)

                    snapshot = await run_bench(
                        client, target.url, info, protocol, on_progress=progress
                    )
                snapshots.append(store.get(store.save(snapshot)))
                print()
        finally:
            for server in servers:
                await server.stop()
        print(compare_text(snapshots[0], snapshots[1], now=time.time(),
                           max_age_s=DEFAULT_MAX_AGE_S))  # fmt: skip
    print("\nNext: `specmon bench URL` against your own server, `specmon check URL` for triage.")
    return 0


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `specmon` script and `python -m specmon`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    # SIGTERM (and SIGHUP where it exists) stop a bench like Ctrl-C: cleanly, nothing saved.
    stops = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    previous = {signum: signal.signal(signum, _raise_interrupt) for signum in stops}
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        what = "the bench did not complete: nothing saved" if args.command == "bench" else ""
        print(f"\nspecmon: interrupted{': ' + what if what else ''}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except TargetError as exc:  # a bad address, key file or option: nothing was tried
        print(f"specmon: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SpecmonError as exc:
        suffix = " (the bench did not complete: nothing saved)" if args.command == "bench" else ""
        print(f"specmon: error: {exc}{suffix}", file=sys.stderr)
        return EXIT_USAGE if args.command == "check" else 1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "demo":
        return asyncio.run(_demo(args))
    if args.command == "check":
        try:
            store: Store | None = _store(args)
        except SpecmonError as exc:
            print(f"specmon: warning: no baseline lookup: {exc}", file=sys.stderr)
            store = None
        try:
            return asyncio.run(_check(args, store))
        finally:
            if store is not None:
                store.close()
    with _store(args) as store:
        if args.command == "bench":
            return asyncio.run(_bench(args, store))
        return _snapshots(args, store)
