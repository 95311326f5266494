"""What `check` says as it goes (`Steps`: the command's progress lines on stderr implement it),
and the most probes it can still take (`ProbePlan`), said as "probe 2/10"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from specmon.check.traffic import TRAFFIC_PROBES
from specmon.model import ServerInfo
from specmon.session.baselines import BaselineLookup


@dataclass(frozen=True, slots=True)
class ProbePlan:
    """The most probes the check can take, as far as it knows at that step."""

    most: int
    """Probes of this server in all, at most: those to the verdict (the rule's cap), then the
    traffic's, then one per category (`most_probes`)."""
    most_baseline: int = 0
    """Probes of the baseline server in all, at most (interleaved: the rule's cap of pairs)."""
    budget_left: Callable[[], float] | None = None
    """Seconds of the budget left now, while probing to a verdict; None otherwise."""


def most_probes(*, verdict: int, traffic: bool, categories: int) -> int:
    """The most probes of this server: `verdict` (the rule's cap while probing to a verdict, the
    probes it took once reached, 1 without a baseline that applies), raised to `TRAFFIC_PROBES`
    where the traffic's gap may need more (`check.traffic`), and one per category after."""
    return max(verdict, TRAFFIC_PROBES if traffic else 1) + categories


class Steps(Protocol):
    """What `run_check` says as it goes, beside the report it returns at the end."""

    def reached(self, info: ServerInfo) -> None:
        """The server answered with its info."""

    def unreachable(self, why: str) -> None:
        """The server could not be read: nothing more is checked."""

    def found(self, lookup: BaselineLookup) -> None:
        """The store's baseline for a speculative server, or why none."""

    def plan(self, plan: ProbePlan) -> None:
        """The most probes from here on (each progress line's "N/M")."""

    def concluded(self, line: str) -> None:
        """The verdict as it was reached, or why there is none."""


class Quiet:
    """`Steps` that say nothing (a check without progress)."""

    def reached(self, info: ServerInfo) -> None:
        """Nothing said."""

    def unreachable(self, why: str) -> None:
        """Nothing said."""

    def found(self, lookup: BaselineLookup) -> None:
        """Nothing said."""

    def plan(self, plan: ProbePlan) -> None:
        """Nothing said."""

    def concluded(self, line: str) -> None:
        """Nothing said."""
