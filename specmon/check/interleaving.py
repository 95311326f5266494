"""`check`'s interleaved probing: the live server and the baseline server probed alternately,
A B B A A B …, under one protocol, until the sequential rule stops on the pairs
(`analysis.paired`: the pairing and its interval; `check.probing`: when it is chosen).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from specmon.analysis.paired import Pair, paired_step
from specmon.analysis.sequential import Look, SequentialRule
from specmon.model import RunFigures, Snapshot

Probe = Callable[[], Awaitable[Snapshot | None]]
"""Takes one probe of a side; None when it failed (the failure already reported)."""


@dataclass(slots=True)
class Interleaved:
    """What interleaving reached: the rule's last look and the pairs it judged."""

    look: Look
    pairs: list[Pair]
    looks: int
    """How many times the rule judged the pairs."""


@dataclass(slots=True)
class Interleaving:
    """Alternate probes of the two servers from the live server's first probe (module docstring).

    The order within a pair alternates, A B | B A | A B | B A …, so that a drift that moves
    steadily between one probe and the next favours neither side over two pairs (a fixed
    A B order would hand the side always probed second the drift of one probe each pair).
    """

    probe_now: Probe
    probe_base: Probe
    rule: SequentialRule
    budget_s: float
    clock: Callable[[], float]
    started: float
    """When the first live probe started: the budget counts from there."""
    pairs: list[Pair] = field(default_factory=list)

    async def until_decided(self, first: RunFigures) -> Interleaved | None:
        """Pair `first` and probe on; None when a probe failed (said by the probe)."""
        now: RunFigures | None = first
        looks = 0
        while True:
            base = await self.probe_base()
            if base is None:
                return None
            if now is None:  # a B A pair: the live server's probe second
                probe = await self.probe_now()
                if probe is None:
                    return None
                now = probe.runs[0]
            self.pairs.append(Pair(now, base.runs[0]))
            look = paired_step(self.rule, self.pairs, self.clock() - self.started, self.budget_s)
            looks += look.comparison is not None
            if look.done:
                return Interleaved(look, list(self.pairs), looks)
            now = None
            if len(self.pairs) % 2 == 0:  # an A B pair next: the live server first
                probe = await self.probe_now()
                if probe is None:
                    return None
                now = probe.runs[0]
