"""Interleaved `check` against the stored-baseline design when the client machine's load changes
between the baseline's bench and the check, against the simulator.

Two loopback simulators (`specmon.sim`, real HTTP servers in this process) run side by side: a
plain one at `--step-ms` per token and a speculative one whose decode speed is the plain one's
times 1 + speedup. Each trial benches a fresh baseline of the plain server into a fresh store
(`specmon bench --runs 5`) on a quiet machine, then starts a CPU hog (one busy-loop process per
core) and runs `specmon check --json` twice against the speculative server, through the CLI as
a user would: once by default (interleaved: the baseline server is up and the process benched)
and once with `--no-interleave` (the stored baseline's runs); the hog is stopped after the
trial. The verdicts, intervals, `verdict_after_s` and whether the check said the conditions
differ are read from the JSON.

    python benchmarks/interleave_drift.py --trials 12                 # 0% and +25%
    python benchmarks/interleave_drift.py --trials 5 --speedups 0.25 --hogs 0

Prints a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from time_to_verdict import fresh_baselines, quiet

from specmon.storage.store import Store

HOG = "while True: pass"


@contextlib.contextmanager
def _hog(count: int) -> Iterator[None]:
    """`count` busy-loop processes while the block runs."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _read(body: dict[str, object]) -> dict[str, object]:
    findings = [str(f["text"]) for f in body["findings"]]  # type: ignore[attr-defined,index]
    design = body["design"] or {}
    return {
        "verdict": body["verdict"],
        "speedup": body["speedup"],
        "low": body["speedup_low"],
        "high": body["speedup_high"],
        "level": body["speedup_level"],
        "after_s": body["verdict_after_s"],
        "design": design.get("kind"),  # type: ignore[attr-defined]
        "pairs": design.get("pairs"),  # type: ignore[attr-defined]
        # A warning: weighed against the verdict (the stored design); the interleaved design says
        # the stored baseline's differences as information only (both servers probed now).
        "conditions_differ": any(
            f["level"] == "warn" and "conditions differ" in f["text"]  # type: ignore[index]
            for f in body["findings"]  # type: ignore[attr-defined]
        ),
        "conditions_noted": any("conditions differ" in f for f in findings),
        "differences": (body["baseline"] or {}).get("conditions", []),  # type: ignore[attr-defined]
        "probe_cpu_pct": _median_cpu(body["probes"]),  # type: ignore[arg-type]
        "baseline_probe_cpu_pct": _median_cpu(body["baseline_probes"]),  # type: ignore[arg-type]
    }


def _median_cpu(runs: list[dict[str, dict[str, float | None] | None]]) -> float | None:
    """The median CPU busy share of specmon's machine over some runs (None: unread)."""
    shares = [
        float(pct)
        for run in runs
        if run.get("conditions") and (pct := run["conditions"].get("host_cpu_pct")) is not None  # type: ignore[union-attr]
    ]
    return statistics.median(shares) if shares else None


def trials(
    speedup: float, count: int, step_ms: float, tokens: int, hogs: int
) -> list[dict[str, object]]:
    """`count` trials: a quiet bench, then (`hogs` busy loops on) an interleaved and a
    stored-design check."""
    found = []
    for url, db in fresh_baselines(speedup, count, step_ms, tokens):
        with _hog(hogs):
            _, paired = quiet(["check", url, "--db", db, "--json"])
            _, stored = quiet(["check", url, "--db", db, "--json", "--no-interleave"])
        store = Store(Path(db))
        try:
            (baseline,) = store.baselines()
        finally:
            store.close()
        found.append(
            {
                "interleaved": _read(json.loads(paired)),
                "stored": _read(json.loads(stored)),
                "bench_cpu_pct": _median_cpu(
                    [
                        {"conditions": dataclasses.asdict(r.conditions)}
                        for r in baseline.runs
                        if r.conditions
                    ]
                ),
            }
        )
    return found


def summary(speedup: float, found: list[dict[str, object]]) -> list[str]:
    rows = []
    for design in ("interleaved", "stored"):
        runs = [t[design] for t in found]  # type: ignore[index]
        verdicts = [str(r["verdict"]) for r in runs]  # type: ignore[index]
        called = sum(v in ("winning", "losing") for v in verdicts)
        times = [float(r["after_s"]) for r in runs if r["after_s"] is not None]  # type: ignore[index]
        in_30 = sum(1 for t in times if t <= 30)
        differ = sum(bool(r["conditions_differ"]) for r in runs)  # type: ignore[index]
        kinds = sorted({str(r["design"]) for r in runs})  # type: ignore[index]
        level = max(float(r["level"] or 0) for r in runs)  # type: ignore[index]
        speedups = [float(r["speedup"]) for r in runs if r["speedup"] is not None]  # type: ignore[index]
        rows.append(
            f"| {speedup:+.0%} | {design} ({'/'.join(kinds)}) | {len(runs)} | "
            f"{verdicts.count('winning')} | {verdicts.count('within noise')} | "
            f"{verdicts.count('losing')} | {called / len(runs):.0%} (α {1 - level:.1%}/look) | "
            f"{statistics.median(speedups):+.1%} | {differ} | "
            f"{in_30 / len(runs):.0%} | {statistics.median(times):.1f} s "
            f"[{min(times):.1f}–{max(times):.1f}] |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=12, help="trials per speedup (12)")
    parser.add_argument("--speedups", default="0,0.25", help="true speedups (0,0.25)")
    parser.add_argument("--step-ms", type=float, default=2.0, help="plain ms per token (2)")
    parser.add_argument("--tokens", type=int, default=100, help="tokens per probe (100)")
    parser.add_argument(
        "--hogs",
        type=int,
        default=os.cpu_count() or 1,
        help="busy-loop processes during the checks (default: one per core; 0: none)",
    )
    parser.add_argument("--out", help="write every trial's figures here as JSON")
    args = parser.parse_args()
    rows, every = [], {}
    for speedup in (float(s) for s in args.speedups.split(",")):
        found = trials(speedup, args.trials, args.step_ms, args.tokens, args.hogs)
        every[f"{speedup:+.2f}"] = found
        rows.extend(summary(speedup, found))
    print(
        "| true speedup | design | trials | winning | within noise | losing | called | "
        "median speedup | said conditions differ | verdict within 30 s | "
        "time to verdict, median [range] |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.out:
        Path(args.out).write_text(json.dumps(every, indent=2))


if __name__ == "__main__":
    main()
