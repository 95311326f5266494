"""Time to `check`'s verdict against the simulator: how often and how fast it calls a real +25%
speedup winning, and how often it calls no speedup anything but "within noise".

Two loopback simulators (`specmon.sim`, real HTTP servers) run side by side: a plain one at
`--step-ms` per token, and a speculative one whose cycle makes its decode speed (1000 · accept /
cycle) the plain one's times 1 + speedup. Each trial benches a fresh baseline of the plain server
into a fresh store (`specmon bench --runs 5`), then runs `specmon check --json` against the
speculative one, through the CLI as a user would; the verdict, its interval, the probes and
`verdict_after_s` are read from its JSON.

    python benchmarks/time_to_verdict.py --trials 40              # +25% and 0%, 40 trials each
    python benchmarks/time_to_verdict.py --trials 10 --speedups 0.25

Prints a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from specmon.cli import main as specmon
from specmon.sim import SimConfig, SimThread

ACCEPT = 2.0


def quiet(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = specmon(argv)
    return code, out.getvalue()


def fresh_baselines(
    speedup: float, count: int, step_ms: float, tokens: int
) -> Iterator[tuple[str, str]]:
    """`count` trials against two simulators, the speculative one `speedup` faster than the plain
    one: for each, a fresh store holding a new 5-run bench of the plain one; yields the
    speculative simulator's URL and that store."""
    spec = SimConfig(
        plain_step_ms=step_ms,
        cycle_ms=ACCEPT * step_ms / (1 + speedup),
        accept_length=ACCEPT,
        ttft_ms=10.0,
        seed=7,
    )
    plain = replace(spec, speculative_algorithm=None)
    with SimThread(spec) as fast, SimThread(plain) as base, tempfile.TemporaryDirectory() as tmp:
        for i in range(count):
            db = str(Path(tmp) / f"trial-{i}.db")
            bench = ["bench", base.url, "--runs", "5", "--max-tokens", str(tokens), "--db", db]
            code, _ = quiet(bench)
            assert code == 0, "the baseline bench failed"
            yield fast.url, db


def trials(
    speedup: float, count: int, step_ms: float, tokens: int, design: str
) -> list[dict[str, object]]:
    """`count` checks of a server `speedup` faster than its baseline, each on a fresh baseline,
    by the `design` asked for (`stored`: `--no-interleave`, the design of the recorded rows)."""
    found = []
    flags = ["--no-interleave"] if design == "stored" else []
    for url, db in fresh_baselines(speedup, count, step_ms, tokens):
        _, out = quiet(["check", url, "--db", db, "--json", *flags])
        body = json.loads(out)
        keys = ("verdict", "speedup", "speedup_low", "speedup_high", "looks", "verdict_after_s")
        found.append({key: body[key] for key in keys} | {"probes": len(body["probes"])})
    return found


def summary(speedup: float, found: list[dict[str, object]]) -> str:
    verdicts = [str(t["verdict"]) for t in found]
    times = [float(t["verdict_after_s"]) for t in found]  # type: ignore[arg-type]
    probes = [int(t["probes"]) for t in found]  # type: ignore[call-overload]
    winning = [t for t in found if t["verdict"] == "winning"]
    in_30 = sum(1 for t in winning if float(t["verdict_after_s"]) <= 30)  # type: ignore[arg-type]
    covered = sum(
        1
        for t in found
        if float(t["speedup_low"]) <= speedup <= float(t["speedup_high"])  # type: ignore[arg-type]
    )
    return (
        f"| {speedup:+.0%} | {len(found)} | {verdicts.count('winning')} | "
        f"{verdicts.count('within noise')} | {verdicts.count('losing')} | "
        f"{in_30 / len(found):.0%} | {statistics.median(times):.1f} s "
        f"[{min(times):.1f}–{max(times):.1f}] | {statistics.median(probes):g} "
        f"[{min(probes)}–{max(probes)}] | {covered}/{len(found)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=40, help="checks per speedup (40)")
    parser.add_argument("--speedups", default="0.25,0", help="true speedups (0.25,0)")
    parser.add_argument("--step-ms", type=float, default=2.0, help="plain ms per token (2)")
    parser.add_argument("--tokens", type=int, default=100, help="tokens per probe (100)")
    parser.add_argument(
        "--design",
        choices=("stored", "interleaved"),
        default="stored",
        help="check's design: the stored baseline's runs (the recorded rows), or interleaved",
    )
    parser.add_argument("--out", help="write every trial's figures here as JSON")
    args = parser.parse_args()
    rows, every = [], {}
    for speedup in (float(s) for s in args.speedups.split(",")):
        found = trials(speedup, args.trials, args.step_ms, args.tokens, args.design)
        every[f"{speedup:+.2f}"] = found
        rows.append(summary(speedup, found))
    print(
        "| true speedup | trials | winning | within noise | losing | winning within 30 s | "
        "time to verdict, median [range] | probes, median [range] | interval held the truth |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.out:
        Path(args.out).write_text(json.dumps(every, indent=2))


if __name__ == "__main__":
    main()
