"""`check`'s progress as it goes: one line per step on stderr (reading, reachable, baseline, each
probe as "probe 2/10", the verdict as it was reached), shown when stderr is a terminal or with
--progress, and what was done when interrupted. It is the `Steps` that `run_check` tells.

stdout and `--json` are untouched: the findings are still printed once, at the end.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TextIO

from specmon.check import ProbePlan
from specmon.check.reading import describe_probe
from specmon.model import Protocol, ServerInfo, Snapshot
from specmon.session.baselines import BaselineLookup
from specmon.wording import counted

Runner = Callable[[Protocol], Awaitable[Snapshot]]


@dataclass(slots=True)
class CheckProgress:
    """Counts `check`'s steps; prints each to `stream` when `show`."""

    show: bool
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    phase: str = "while starting"
    """When, for the interrupt message: "while reading the server", "during probe 3"."""
    probes: int = 0
    """Probes of this server finished."""
    baseline_probes: int = 0
    """Probes of the baseline server finished (interleaved design)."""
    most: ProbePlan = field(default_factory=lambda: ProbePlan(1))
    """The most probes, as `run_check` last said (`check.steps`)."""
    conclusion: str | None = None
    """The verdict as it was reached, or why there is none."""

    def say(self, line: str) -> None:
        """One progress line, when shown."""
        if self.show:
            print(f"specmon: {line}", file=self.stream, flush=True)

    def reading(self, url: str) -> None:
        """Before the first request."""
        self.phase = "while reading the server"
        self.say(f"reading {url}")

    def unreachable(self, why: str) -> None:
        """The server could not be read (`Steps`)."""
        self.phase = "after the server could not be read"
        self.say(f"cannot check: {why}")

    def reached(self, info: ServerInfo) -> None:
        """The server answered with its info (`Steps`)."""
        self.phase = "after the server answered"
        line = f"reachable: {info.title} serving {info.model or '?'}"
        if info.speculative is None:
            line += " — speculation off: one probe, no speedup to judge"
        self.say(line)

    def found(self, lookup: BaselineLookup) -> None:
        """The baseline lookup's result (`Steps`)."""
        base = lookup.baseline
        if base is None:
            self.say(f"baseline: {lookup.why_none()}")
        else:
            self.say(f"baseline: #{base.id} ({base.url})")

    def plan(self, plan: ProbePlan) -> None:
        """The most probes from here on (`Steps`)."""
        self.most = plan

    def concluded(self, line: str) -> None:
        """The verdict as it was reached (`Steps`)."""
        self.conclusion = line
        self.say(line)

    def _budget(self) -> str:
        """ "24 s of the budget left" while probing to a verdict, else ""."""
        left = self.most.budget_left
        return "" if left is None else f"{max(0.0, left()):.0f} s of the budget left"

    def probing(self, run: Runner) -> Runner:
        """`run`, each probe of this server counted and said as "probe N/M"."""

        async def probe(protocol: Protocol) -> Snapshot:
            n = self.probes + 1
            self.phase = f"during probe {n}"
            budget = f" ({left})" if (left := self._budget()) else ""
            self.say(f"probe {n}/{self.most.most}: {protocol.max_tokens} tokens{budget} …")
            snapshot = await run(protocol)
            self.probes = n
            self.phase = f"after probe {n}"
            self.say(f"probe {n}/{self.most.most}: {describe_probe(snapshot.runs[0])}")
            return snapshot

        return probe

    def probing_baseline(
        self, run: Callable[[str, Protocol], Awaitable[Snapshot]]
    ) -> Callable[[str, Protocol], Awaitable[Snapshot]]:
        """`run`, each probe of the baseline server counted and said as "baseline probe N/M"."""

        async def probe(url: str, protocol: Protocol) -> Snapshot:
            n, most = self.baseline_probes + 1, self.most.most_baseline
            self.phase = f"during baseline probe {n}"
            budget = f", {left}" if (left := self._budget()) else ""
            self.say(f"baseline probe {n}/{most} ({url}{budget}) …")
            snapshot = await run(url, protocol)
            self.baseline_probes = n
            self.phase = f"after baseline probe {n}"
            self.say(f"baseline probe {n}/{most}: {describe_probe(snapshot.runs[0])}")
            return snapshot

        return probe

    def finished(self) -> None:
        """The check ran to its end: its findings follow on stdout."""
        self.phase = "while printing"
        self.say(f"done: {self._done()}")

    def _done(self) -> str:
        done = counted(self.probes, "probe")
        if self.baseline_probes:
            done += f" and {counted(self.baseline_probes, 'baseline probe')}"
        return done

    def interrupted(self) -> str:
        """ "during probe 3: 2 probes done, no verdict": what was and was not done."""
        return f"{self.phase}: {self._done()} done, {self.conclusion or 'no verdict'}"
