"""Whether two sets of runs ran under like conditions (docs/design.md §5, docs/metrics.md
"Conditions"): the server's load beside them, and whether specmon's own machine kept up.

A probe beside another request shares the server's batch (a second specmon probing the same
server, or real traffic), so it is slower than it would be alone; a client starved of CPU reads
its chunks late. A comparison of runs under one set of conditions with runs under another says
so (`condition_differences`); unknown conditions (records older than them, metrics off) are not
taken for a difference.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from specmon.model import RunConditions
from specmon.wording import counted

STARVED_LAG_MS = 2.0
"""A run whose client timer ran this late or later (median) was starved of CPU: chunks were
read that late throughout. On the 2-core machine of docs/performance.md a quiet loop's median
lag is ~0.15 ms; with two CPU hogs beside it ~6 ms."""
BUSY_CPU_PCT = 90.0
"""A run during which specmon's machine (all its CPUs) was this busy or busier ran on a busy
client, even when its reads kept up: with one busy loop per core started after the baseline's
bench, the stored-baseline check called a true 0% winning or losing in 11% of trials on the
2-core machine of docs/performance.md (its stated rate 5%), its reads late by under 1 ms, the
machine 100% busy; the quiet benches before them read 5–33% (their runs' median), and 100%
under the hog."""


@dataclass(frozen=True, slots=True)
class Conditions:
    """The conditions of a set of runs, summed up."""

    runs: int
    load_known: int
    """Runs whose server load was read while they streamed."""
    beside: int
    """Of those, the runs that ran beside other requests."""
    most_others: int | None
    """The most other requests beside any run; None when no run's load is known."""
    fewest_beside: int | None
    """The fewest other requests beside a run that ran beside any; None when none did."""
    most_queued: int | None
    lag_known: int
    """Runs whose client lag was measured."""
    starved: int
    """Of those, the runs whose client was starved (`STARVED_LAG_MS`)."""
    worst_lag_ms: float | None
    """The highest median lag of a starved run, else of any run; None when none was measured."""
    cpu_known: int
    """Runs whose machine's CPU busy share was read."""
    busy: int
    """Of those, the runs during which the machine was busy (`BUSY_CPU_PCT`)."""
    cpu_pct: float | None
    """The highest CPU busy share of specmon's machine over a run."""
    quietest_cpu_pct: float | None
    """The lowest CPU busy share of specmon's machine over a run."""
    steal_pct: float | None

    @property
    def alone(self) -> bool | None:
        """Every run whose load is known ran alone; None when no run's load is known."""
        return None if not self.load_known else self.beside == 0


def conditions_of(conditions: Iterable[RunConditions | None]) -> Conditions:
    """Sum up the conditions of some runs (`RunFigures.conditions`; None: unknown)."""
    items = list(conditions)
    known = [c for c in items if c is not None and c.others_running is not None]
    others = [c.others_running for c in known if c.others_running is not None]
    queued = [c.queued for c in known if c.queued is not None]
    lags = [c.read_lag_ms for c in items if c is not None and c.read_lag_ms is not None]
    starved = [lag for lag in lags if lag >= STARVED_LAG_MS]
    cpu = [c.host_cpu_pct for c in items if c is not None and c.host_cpu_pct is not None]
    steal = [c.host_steal_pct for c in items if c is not None and c.host_steal_pct is not None]
    return Conditions(
        runs=len(items),
        load_known=len(known),
        beside=sum(1 for n in others if n > 0),
        most_others=max(others) if others else None,
        fewest_beside=min((n for n in others if n > 0), default=None),
        most_queued=max(queued) if queued else None,
        lag_known=len(lags),
        starved=len(starved),
        worst_lag_ms=max(starved or lags) if lags else None,
        cpu_known=len(cpu),
        busy=sum(1 for pct in cpu if pct >= BUSY_CPU_PCT),
        cpu_pct=max(cpu) if cpu else None,
        quietest_cpu_pct=min(cpu) if cpu else None,
        steal_pct=max(steal) if steal else None,
    )


def load_text(c: Conditions) -> str | None:
    """ "alone", "beside 1 other request", "beside up to 3 other requests (2 queued)"; None
    when unknown."""
    if c.alone is None or c.most_others is None:
        return None
    if c.alone:
        return "alone"
    up_to = "up to " if c.fewest_beside != c.most_others else ""
    text = f"beside {up_to}{counted(c.most_others, 'other request')}"
    if c.most_queued:
        text += f" ({c.most_queued} queued)"
    return text


def starved_text(c: Conditions) -> str | None:
    """ "its reads ran 6.0 ms late, median; CPU 100% busy": the evidence that specmon's machine
    was starved of CPU; None when it was not or nobody measured."""
    if not c.starved or c.worst_lag_ms is None:
        return None
    evidence = [f"its reads ran {c.worst_lag_ms:.1f} ms late, median"]
    if c.cpu_pct is not None:
        evidence.append(f"CPU {c.cpu_pct:.0f}% busy")
    if c.steal_pct:
        evidence.append(f"{c.steal_pct:.0f}% stolen")
    return "; ".join(evidence)


def busy(c: Conditions) -> bool:
    """Most of the runs whose CPU share was read ran on a busy machine (`BUSY_CPU_PCT`): one
    short busy moment among a bench's runs does not make the bench busy."""
    return 2 * c.busy > c.cpu_known


def busy_text(c: Conditions) -> str:
    """ "CPU 100%", "CPU 20–48%": the machine's busy share over the runs."""
    assert c.cpu_pct is not None and c.quietest_cpu_pct is not None
    low, high = round(c.quietest_cpu_pct), round(c.cpu_pct)
    return f"CPU {high}%" if low == high else f"CPU {low}–{high}%"


def condition_differences(
    base: Conditions, other: Conditions, other_name: str = "probe"
) -> list[str]:
    """How the conditions of `other` (the probe, or the run) differed from the baseline's, one
    sentence each: "the probe ran beside 1 other request; the baseline ran alone",
    "specmon's machine was starved of CPU during the probe (its reads ran 6.0 ms late, median;
    CPU 100% busy); not during the baseline".

    The load differs when one side ran alone and the other did not, or both ran beside others
    but at most a different number; the client when one side was starved and the other not,
    else when one side's machine was busy and the other's not ("specmon's machine was busy
    during the probe (CPU 100%); not during the baseline (CPU 21–40%)").
    Unknown on either side is no difference.
    """
    found = []
    base_load, other_load = load_text(base), load_text(other)
    if base_load is not None and other_load is not None and base_load != other_load:
        found.append(
            f"the {other_name} ran {other_load}{_part(other.beside, other.load_known)}; "
            f"the baseline ran {base_load}{_part(base.beside, base.load_known)}"
        )
    if base.lag_known and other.lag_known and bool(base.starved) != bool(other.starved):
        side, name, calm = (
            (other, other_name, "baseline") if other.starved else (base, "baseline", other_name)
        )
        found.append(
            f"specmon's machine was starved of CPU during the {name}"
            f"{_part(side.starved, side.lag_known)} ({starved_text(side)}); not during the {calm}"
        )
    elif base.cpu_known and other.cpu_known and busy(base) != busy(other):
        side, name, quiet, quiet_name = (
            (other, other_name, base, "baseline")
            if busy(other)
            else (base, "baseline", other, other_name)
        )
        found.append(
            f"specmon's machine was busy during the {name}{_part(side.busy, side.cpu_known)} "
            f"({busy_text(side)}); not during the {quiet_name} ({busy_text(quiet)})"
        )
    return found


def _part(count: int, of: int) -> str:
    """ " (2 of 5 runs)" when only some of a side's runs were so; "" when all (or none) were."""
    return "" if count in (0, of) else f" ({count} of {of} runs)"


def one_liner(c: Conditions) -> str | None:
    """The conditions of some runs in a few words: "alone", "beside 1 other request (2 of 5
    runs); specmon's machine starved of CPU (…)"; None when nothing is known."""
    parts = []
    if (load := load_text(c)) is not None:
        parts.append(load + _part(c.beside, c.load_known))
    if (starved := starved_text(c)) is not None:
        parts.append(f"specmon's machine starved of CPU{_part(c.starved, c.lag_known)} ({starved})")
    elif c.cpu_known and busy(c):
        parts.append(f"specmon's machine busy{_part(c.busy, c.cpu_known)} ({busy_text(c)})")
    return "; ".join(parts) if parts else None


def company_change(before: int | None, now: int | None) -> str | None:
    """What the events log says when the requests beside the probe change: from alone to
    beside others (another client on the server: traffic, or a second specmon probing it), a
    different number of them, or back to alone; None when nothing changed or it is unknown."""
    if now is None or now == (before or 0):
        return None
    if now == 0:
        return "the probe ran alone again: no other request beside it"
    return (
        f"the probe ran beside {counted(now, 'other request')}: another client is using this "
        "server (traffic, or a second specmon probing it), so the probe is not alone in its batch"
    )
