"""What `specmon ab` prints: the split, the table per concurrency, the crossover, and its JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specmon.analysis.catalogue import Measured, figure
from specmon.analysis.comparison import TENTATIVE_ROUNDS
from specmon.analysis.load import Best, Crossover, Level
from specmon.launch.split import Split
from specmon.storage.serialize import comparison_to_dict, crossover_to_dict, pooled_to_dict
from specmon.wording import DASH, num, pct, streams, validity_mark, verdict_text

DECODE, ACCEPT, CYCLE = figure("decode tok/s"), figure("accept length"), figure("cycle")
SPEEDUP, BREAK_EVEN = figure("speedup"), figure("break-even accept length")

AB_SCHEMA = 2
"""The `ab --json` object's version (2: the rounds' speedups and `tentative`, no τ²)."""


def split_lines(split: Split) -> list[str]:
    """The two commands, what was taken out, what is pinned and why."""
    lines = [
        f"Server: {split.kind} (speculative flags found by {split.rules})",
        f"Speculative: {split.speculative.shell()}",
        f"Baseline:    {split.baseline.shell()}",
        f"Removed for the baseline: {' '.join(split.removed) or DASH}",
    ]
    lines += [f"Pinned on both: {pin.describe()}" for pin in split.pins]
    if split.baseline_only:
        lines.append(
            f"Baseline only: {' '.join(split.baseline_only)} (the simulator speculates unless "
            "told not to)"
        )
    lines += [f"Note: {note}" for note in split.notes]
    return lines


HEADER = (
    f"{'streams':>7}  {'baseline':>9}  {'spec':>9}  {'speedup [95%]':<26}  {'verdict':<24}  "
    f"{'accept':>6}  {'cycle':>8}  {'break-even':>10}  {'throughput base → spec':<24}  valid"
)


def table_lines(levels: Sequence[Level]) -> list[str]:
    """One row per concurrency: per-request decode tok/s of each side, the speedup with its
    interval and verdict, the speculative accept length and cycle, the break-even, the total
    throughput of each side and whether every round's pair applies."""
    lines = [HEADER]
    for lv in levels:
        c = lv.comparison
        # The catalogue's figures (`analysis.catalogue`) of each side's runs, pooled over the
        # rounds; the total throughput is not one of them (all streams, not one's decode).
        base, spec = Measured(lv.baseline), Measured(lv.speculative, c)
        throughput = (
            f"{num(lv.baseline_throughput, '.1f')} → {num(lv.speculative_throughput, '.1f')}"
        )
        lines.append(
            f"{lv.concurrency:>7}  {DECODE.written(base) or DASH:>9}  "
            f"{DECODE.written(spec) or DASH:>9}  {SPEEDUP.written(spec) or DASH:<26}  "
            f"{verdict_text(c) if c else DASH:<24}  {ACCEPT.written(spec) or DASH:>6}  "
            f"{CYCLE.shown(spec):>8}  {BREAK_EVEN.written(spec) or DASH:>10}  {throughput:<24}  "
            f"{_validity(lv)}"
        )
    lines.append("(tok/s: per-request decode, pooled over every round; throughput: all streams)")
    lines += _interval_lines(levels)
    return lines


def _interval_lines(levels: Sequence[Level]) -> list[str]:
    """What the intervals hold: the runs' noise alone (one round), or the rounds' own speedups,
    listed; and that a verdict from fewer than `TENTATIVE_ROUNDS` rounds is tentative."""
    spreads = [lv.spread for lv in levels if lv.spread is not None]
    rounds = max((spread.rounds for spread in spreads), default=1)
    if rounds < 2:
        lines = [
            "(one round: the 95% intervals hold the runs' noise only, not how a server's speed "
            "moves between launches)"
        ]
    else:
        lines = ["(95% intervals from the rounds' own speedups, t with rounds − 1 df:)"]
        for lv in levels:
            if lv.spread is not None:  # each round's own speedup: not the pooled figure
                each = ", ".join(pct(g, signed=True) for g in lv.spread.speedups)
                lines.append(f"{streams(lv.concurrency, 7)}: {each}")
    if rounds < TENTATIVE_ROUNDS:
        lines.append(
            f"(tentative: fewer than {TENTATIVE_ROUNDS} rounds; --rounds {TENTATIVE_ROUNDS} or "
            "more to confirm)"
        )
    return lines


def _validity(lv: Level) -> str:
    invalid = [v for v in lv.validity if not v.valid]
    return validity_mark(invalid[0] if invalid else lv.validity[0]) or DASH


def best_lines(best: Sequence[Best]) -> list[str]:
    """The sweep's best configuration at each concurrency."""
    lines = ["Best configuration per concurrency:"]
    for b in best:
        c = b.level.comparison
        gain = SPEEDUP.written(Measured(b.level.speculative, c))
        said = f"{gain}, {verdict_text(c)}" if c is not None else DASH
        lines.append(f"  {streams(b.concurrency, 4)}: {b.config} ({said})")
    return lines


def _level_to_dict(lv: Level) -> dict[str, Any]:
    return {
        "concurrency": lv.concurrency,
        "baseline": pooled_to_dict(lv.baseline),
        "speculative": pooled_to_dict(lv.speculative),
        "comparison": comparison_to_dict(lv.comparison),
        "round_spread": (
            {"speedups": list(lv.spread.speedups), "tentative": lv.spread.tentative}
            if lv.spread is not None
            else None
        ),
        "baseline_throughput_tok_s": lv.baseline_throughput,
        "speculative_throughput_tok_s": lv.speculative_throughput,
        "valid": lv.valid,
        "reasons": sorted({r for v in lv.validity for r in v.reasons}),
    }


def report_to_dict(
    split: Split,
    per_config: Sequence[tuple[str | None, Sequence[Level], Crossover]],
    best: Sequence[Best],
    snapshot_ids: Sequence[int],
    skipped: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON of `ab --json` (schema AB_SCHEMA): the commands, each configuration's levels and
    crossover (one, labelled null, without --sweep), the best per concurrency, the ids saved."""
    return {
        "schema": AB_SCHEMA,
        "server": split.kind.value,
        "rules": split.rules,
        "speculative_command": split.speculative.shell(),
        "baseline_command": split.baseline.shell(),
        "removed": list(split.removed),
        "pinned": [{"flag": p.flag, "value": p.value, "reason": p.reason} for p in split.pins],
        "baseline_only": list(split.baseline_only),
        "notes": list(split.notes),
        "configs": [
            {
                "config": config,
                "levels": [_level_to_dict(lv) for lv in found],
                "crossover": crossover_to_dict(cross),
            }
            for config, found, cross in per_config
        ],
        "skipped": list(skipped),
        "best": [
            {
                "concurrency": b.concurrency,
                "config": b.config,
                "speedup": comparison_to_dict(b.level.comparison),
            }
            for b in best
        ],
        "snapshot_ids": list(snapshot_ids),
    }
