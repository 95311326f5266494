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


# The table's columns: key, header, right-aligned, and the order the optional ones join in
# while they fit a terminal's width (None: always shown). The first five say who wins at each
# load; `--json` has every figure.
COLUMNS = (
    ("streams", "streams", True, None),
    ("baseline", "baseline", True, None),
    ("spec", "spec", True, None),
    ("speedup", "speedup [95%]", False, None),
    ("verdict", "verdict", False, None),
    ("accept", "accept", True, 1),
    ("cycle", "cycle", True, 3),
    ("break_even", "break-even", True, 2),
    ("throughput", "throughput base → spec", False, 4),
    ("valid", "valid", False, 0),
)  # fmt: skip
GAP = 2
"""Spaces between columns."""


def _row(lv: Level) -> dict[str, str]:
    c = lv.comparison
    # The catalogue's figures (`analysis.catalogue`) of each side's runs, pooled over the
    # rounds; the total throughput is not one of them (all streams, not one's decode).
    base, spec = Measured(lv.baseline), Measured(lv.speculative, c)
    throughput = f"{num(lv.baseline_throughput, '.1f')} → {num(lv.speculative_throughput, '.1f')}"
    return {
        "streams": str(lv.concurrency),
        "baseline": DECODE.written(base) or DASH,
        "spec": DECODE.written(spec) or DASH,
        "speedup": SPEEDUP.written(spec) or DASH,
        "verdict": verdict_text(c) if c else DASH,
        "accept": ACCEPT.written(spec) or DASH,
        "cycle": CYCLE.shown(spec),
        "break_even": BREAK_EVEN.written(spec) or DASH,
        "throughput": throughput,
        "valid": _validity(lv),
    }


def table_lines(levels: Sequence[Level], width: int | None = None) -> list[str]:
    """One row per concurrency: per-request decode tok/s of each side, the speedup with its
    interval and verdict, the speculative accept length and cycle, the break-even, the total
    throughput of each side and whether every round's pair applies.

    Args:
        levels: The levels, by concurrency.
        width: The terminal's columns: the optional columns join while they fit, and a line
            says which were left out (None: all of them, as into a file or a pipe).
    """
    rows = [_row(lv) for lv in levels]
    natural = {
        key: max([len(header), *(len(row[key]) for row in rows)]) for key, header, _, _ in COLUMNS
    }
    shown = {key for key, _, _, rank in COLUMNS if rank is None}
    if width is None:
        shown = set(natural)
    else:
        used = sum(natural[key] for key in shown) + GAP * (len(shown) - 1)
        for key, _, _, _ in sorted((c for c in COLUMNS if c[3] is not None), key=lambda c: c[3]):
            if used + GAP + natural[key] <= width:
                shown.add(key)
                used += GAP + natural[key]
    columns = [c for c in COLUMNS if c[0] in shown]

    def line(cells: dict[str, str]) -> str:
        return (
            (" " * GAP)
            .join(
                cells[key].rjust(natural[key]) if right else cells[key].ljust(natural[key])
                for key, _, right, _ in columns
            )
            .rstrip()
        )

    lines = [line({key: header for key, header, _, _ in COLUMNS}), *(line(r) for r in rows)]
    lines.append("(tok/s: per-request decode, pooled over every round; throughput: all streams)")
    left_out = [key.replace("_", "-") for key, _, _, _ in COLUMNS if key not in shown]
    if left_out:
        lines.append(f"({width} columns: no {', '.join(left_out)}; --json has them)")
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
