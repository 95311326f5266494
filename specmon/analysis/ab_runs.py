"""A managed A/B's benches and what they give: each round's pair per concurrency, pooled into
`analysis.load.Level`s, and the crossover, per speculative configuration (pure: `ab` runs them,
the store keeps them, the dashboard reads its server's latest back)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from specmon.analysis.load import Crossover, Level, crossover, level
from specmon.model import Snapshot, SpecConfig


class Side(StrEnum):
    """Which of the two servers."""

    BASELINE = "baseline"
    SPECULATIVE = "speculative"


@dataclass(frozen=True, slots=True)
class AbRun:
    """One complete bench of an A/B."""

    round: int
    side: Side
    snapshot: Snapshot
    config: str | None = None
    """The sweep's label of the speculative configuration (None for the baseline, and without
    a sweep)."""


def configs(runs: Sequence[AbRun]) -> list[str | None]:
    """The speculative configurations of an A/B, in the order they ran."""
    return list(dict.fromkeys(r.config for r in runs if r.side == Side.SPECULATIVE))


def levels(runs: Sequence[AbRun], *, max_age_s: float, config: str | None = None) -> list[Level]:
    """The figures of one configuration at each concurrency, each round's pair (its baseline
    and that configuration) pooled over the rounds (`analysis.load.level`) and judged at its
    own time: however long the A/B ran, a round is as fresh as the gap within it."""
    pairs: dict[int, dict[int, dict[Side, Snapshot]]] = {}
    for run in runs:
        if run.side == Side.SPECULATIVE and run.config != config:
            continue
        rounds = pairs.setdefault(run.snapshot.protocol.concurrency, {})
        rounds.setdefault(run.round, {})[run.side] = run.snapshot
    return [
        level(
            concurrency,
            [
                (sides[Side.BASELINE], sides[Side.SPECULATIVE])
                for _, sides in sorted(rounds.items())
            ],
            max_age_s=max_age_s,
        )
        for concurrency, rounds in sorted(pairs.items())
    ]


def judged(
    runs: Sequence[AbRun], *, max_age_s: float
) -> list[tuple[str | None, list[Level], Crossover]]:
    """Each configuration's `levels` and their crossover, in the order the configurations ran."""
    out = []
    for config in configs(runs):
        found = levels(runs, max_age_s=max_age_s, config=config)
        out.append((config, found, crossover(found)))
    return out


def of_configuration(runs: Sequence[AbRun], speculative: SpecConfig | None) -> list[AbRun]:
    """The benches of the configuration a server runs: every baseline, and the speculative
    benches taken with `speculative` (of a sweep, the configuration the server was launched
    with; none when it runs another)."""
    return [
        run
        for run in runs
        if run.side == Side.BASELINE or run.snapshot.server.speculative == speculative
    ]


@dataclass(frozen=True, slots=True)
class StoredAb:
    """A stored A/B of the configuration a server runs: its levels and crossover."""

    ab_id: int
    """The A/B's first snapshot's id (`Store.latest_ab`)."""
    ended_at: float
    """When its last bench was taken (wall clock)."""
    levels: tuple[Level, ...]
    crossover: Crossover
    url: str = ""
    """The server it ran on: the store finds an A/B by configuration, which another server
    may share."""


def stored_ab(
    runs: Sequence[AbRun], speculative: SpecConfig | None, *, max_age_s: float
) -> StoredAb | None:
    """The levels and crossover of the benches taken with the server's configuration
    (`of_configuration`), judged as `ab` judged them; None when the A/B ran none of them."""
    found = judged(of_configuration(runs, speculative), max_age_s=max_age_s)
    first = runs[0].snapshot if runs else None
    if not found or first is None or first.id is None:
        return None
    (_, found_levels, cross), *_ = found
    ended = max(run.snapshot.created_at for run in runs)
    return StoredAb(first.id, ended, tuple(found_levels), cross, first.url)
