"""`check`'s progress as it goes: one line per step on stderr (reading, reachable, baseline, each
probe), shown when stderr is a terminal or with --progress, and what was done when interrupted.

stdout and `--json` are untouched: the findings are still printed once, at the end.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TextIO

from specmon.check import _describe_probe
from specmon.model import Protocol, ServerInfo, Snapshot
from specmon.session.baselines import BaselineLookup

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

    def say(self, line: str) -> None:
        """One progress line, when shown."""
        if self.show:
            print(f"specmon: {line}", file=self.stream, flush=True)

    def reading(self, url: str) -> None:
        """Before the first request."""
        self.phase = "while reading the server"
        self.say(f"reading {url}")

    def reached(self, info: ServerInfo) -> None:
        """The server answered (its info is known)."""
        self.phase = "while looking up a baseline"
        self.say(f"reachable: {info.title} serving {info.model or '?'}")

    def found(self, lookup: BaselineLookup) -> None:
        """The baseline lookup's result."""
        base = lookup.baseline
        if base is None:
            self.say(f"baseline: {lookup.why_none()}")
        else:
            self.say(f"baseline: #{base.id} ({base.url})")

    def probing(self, run: Runner) -> Runner:
        """`run`, each probe of this server counted and said."""

        async def probe(protocol: Protocol) -> Snapshot:
            self.phase = f"during probe {self.probes + 1}"
            self.say(f"probe {self.probes + 1}: {protocol.max_tokens} tokens …")
            snapshot = await run(protocol)
            self.probes += 1
            self.phase = f"after probe {self.probes}"
            self.say(f"probe {self.probes}: {_describe_probe(snapshot.runs[0])}")
            return snapshot

        return probe

    def probing_baseline(
        self, run: Callable[[str, Protocol], Awaitable[Snapshot]]
    ) -> Callable[[str, Protocol], Awaitable[Snapshot]]:
        """`run`, each probe of the baseline server counted and said."""

        async def probe(url: str, protocol: Protocol) -> Snapshot:
            self.phase = f"during baseline probe {self.baseline_probes + 1}"
            self.say(f"baseline probe {self.baseline_probes + 1} ({url}) …")
            snapshot = await run(url, protocol)
            self.baseline_probes += 1
            self.phase = f"after baseline probe {self.baseline_probes}"
            self.say(f"baseline probe {self.baseline_probes}: {_describe_probe(snapshot.runs[0])}")
            return snapshot

        return probe

    def finished(self) -> None:
        """The check ran to its end: its findings follow on stdout."""
        self.phase = "while printing"
        self.say(f"done: {self._done()}")

    def _done(self) -> str:
        done = _count(self.probes, "probe")
        if self.baseline_probes:
            done += f" and {_count(self.baseline_probes, 'baseline probe')}"
        return done

    def interrupted(self) -> str:
        """ "during probe 3: 2 probes done, no verdict": what was and was not done."""
        return f"{self.phase}: {self._done()} done, no verdict"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
