"""The one baseline rule (docs/design.md §5): which stored baseline a speculative server, or a
stored speculative run, is compared with, and why. Every surface asks `choose_baseline`: the
dashboard's Baseline panel, the fleet, the exporter, `--once` and `check` (through a session's
lookup), `whatif`, the `c` screen and `snapshots compare/export`.

The rule, in order:

1. A baseline the user named wins: `--baseline ID` (that snapshot, whatever it is), or the
   server of `--baseline-url` / `--baseline URL` (only that server's snapshots are candidates).
2. Candidates are plain snapshots of the same configuration (flags apart from speculation, the
   model) taken with the same protocol (max tokens unless the probe follows the baseline's,
   temperature, prompt and so its category, concurrency), before the run when a stored run is
   judged.
3. Among those, valid ones beat newer ones: confirmed valid first, then valid with its server
   unverified, then stale; the newest within each. Where any max tokens will do (`check`,
   `whatif` follow the baseline's), those of the default size come first: the dashboard's.
4. When none is a candidate, the nearest plain snapshot is named with what disqualifies it.

The rule is pure: the candidates and a judge (`Validity` of one candidate, with whatever the
caller read of its server's lifetime) come in, the choice and its reasons go out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from specmon.analysis.validity import Validity, another_backend, differing_keys
from specmon.model import Protocol, ServerInfo, Snapshot
from specmon.wording import stale_words


class Rule(StrEnum):
    """Which part of the rule picked the baseline (the `i` screen, `check --json`)."""

    PINNED_URL = "pinned by --baseline-url"
    """The newest of the named baseline server's snapshots that applies."""
    PINNED_ID = "pinned by --baseline ID"
    """The snapshot the user named."""
    LATEST_VALID = "latest valid of the configuration and protocol"
    LATEST_UNVERIFIED = "latest of the configuration and protocol, its server unverified"
    """None is confirmed valid; this one applies as far as is known."""
    LATEST_STALE = "latest of the configuration and protocol, none valid"
    NONE_APPLIES = "none of the configuration and protocol"
    EMPTY = "no baseline in the store"


@dataclass(frozen=True, slots=True)
class Pin:
    """A baseline the user named: a snapshot by id, or a baseline server by URL."""

    snapshot_id: int | None = None
    url: str | None = None

    @property
    def rule(self) -> Rule:
        """How a baseline picked under this pin is described."""
        return Rule.PINNED_ID if self.snapshot_id is not None else Rule.PINNED_URL

    def text(self) -> str:
        """ "--baseline 7", "--baseline-url http://…"."""
        if self.snapshot_id is not None:
            return f"--baseline {self.snapshot_id}"
        return f"--baseline-url {self.url}"


@dataclass(frozen=True, slots=True)
class Wanted:
    """The protocol a baseline must have been taken with."""

    prompt: str
    temperature: float = 0.0
    concurrency: int = 1
    max_tokens: int | None = None
    """None: any; the probe follows the baseline's (`check`, `whatif`: one bench each)."""
    prefer_tokens: int | None = None
    """With any max tokens: this size first (the dashboard's probe's), so that where the
    dashboard has a baseline, `check` and `whatif` choose the same one."""
    side: str = "the probe"
    """What the other side is called in a difference: "the probe", "the run"."""

    @classmethod
    def of(cls, protocol: Protocol, side: str = "the probe") -> Wanted:
        """Exactly `protocol`'s (runs and warm-up do not change what a run measures)."""
        return cls(
            protocol.prompt,
            protocol.temperature,
            protocol.concurrency,
            protocol.max_tokens,
            side=side,
        )

    def differences(self, theirs: Protocol) -> list[str]:
        """ "max_tokens 500, the probe uses 256", "another prompt than the probe's"."""
        found = []
        if self.max_tokens is not None and theirs.max_tokens != self.max_tokens:
            found.append(f"max_tokens {theirs.max_tokens}, {self.side} uses {self.max_tokens}")
        if theirs.temperature != self.temperature:
            ours = f"{self.side} uses {self.temperature:g}"
            found.append(f"temperature {theirs.temperature:g}, {ours}")
        if theirs.prompt != self.prompt:
            found.append(f"another prompt than {self.side}'s")
        if theirs.concurrency != self.concurrency:
            found.append(f"concurrency {theirs.concurrency}, {self.side} uses {self.concurrency}")
        return found


@dataclass(frozen=True, slots=True)
class Rejected:
    """A baseline that was not chosen, and why: the nearest when none applies, else the
    runner-up."""

    snapshot: Snapshot
    reasons: tuple[str, ...]
    """ "differs in flag mem_fraction_static", "was taken with concurrency 16, the probe uses
    1", "older than #7", "stale: …", "its server unverified: …"."""

    def text(self) -> str:
        """ "#3 (http://…) was taken with max_tokens 500, the probe uses 256"."""
        return f"#{self.snapshot.id} ({self.snapshot.url}) " + " and ".join(self.reasons)


@dataclass(frozen=True, slots=True)
class BaselineChoice:
    """The rule's answer: the baseline (or None), which part of the rule picked it, how many
    plain snapshots were considered, and the nearest rejected with its reason."""

    baseline: Snapshot | None
    rule: str = Rule.EMPTY.value
    considered: int = 0
    """Plain snapshots considered (under a pin: the pinned server's)."""
    rejected: Rejected | None = None
    """Without a baseline: the nearest one, with what disqualifies it; with one: the next in
    line, with why it lost."""
    pinned: str | None = None
    """What the user named ("--baseline 7", "--baseline-url http://…"), when anything."""

    def why_none(self) -> str:
        """ "no baseline applies: #1 (http://…) was taken with max_tokens 500, the probe uses
        256", "no snapshot of http://… (--baseline-url) in the store" or "no baseline in the
        store": one line, what every surface says (a pin named once: its flag, not its value
        again)."""
        flag, _, what = (self.pinned or "").partition(" ")
        if self.rejected is not None:
            return f"no baseline applies{f' ({flag})' if flag else ''}: {self.rejected.text()}"
        if not flag:
            return "no baseline in the store"
        if flag == "--baseline":
            return f"snapshot #{what} ({flag}) is not in the store"
        return f"no snapshot of {what} ({flag}) in the store"

    def described(self) -> str:
        """ "latest valid of the configuration and protocol; 3 considered; next: #4 (http://…)
        was taken with concurrency 16, the probe uses 1": which rule picked it, and what else
        was considered (the `i` screen, `check`)."""
        pinned = f" ({self.pinned})" if self.pinned else ""
        return f"{self.rule}{pinned}; {self.considered_text()}"

    def considered_text(self) -> str:
        """ "3 considered; #4 (http://…) was taken with concurrency 16, the probe uses 1"."""
        text = f"{self.considered} considered"
        if self.rejected is not None and self.baseline is not None:
            text += f"; next: {self.rejected.text()}"
        return text


def choose_baseline(
    candidates: Iterable[Snapshot],
    server: ServerInfo,
    wanted: Wanted,
    judge: Callable[[Snapshot], Validity],
    *,
    pin: Pin | None = None,
    before: float | None = None,
) -> BaselineChoice:
    """The baseline of a speculative server or run, by the rule (module docstring).

    Args:
        candidates: Snapshots to choose from (the store's; speculative ones are passed over).
        server: The speculative side's server info (its configuration).
        wanted: The protocol the baseline must have.
        judge: Whether a candidate applies (`baseline_validity` now, or `snapshot_validity`
            for a stored run), with what the caller knows of its server's lifetime.
        pin: A baseline the user named.
        before: A stored run's time: later baselines are another launch, never its baseline.
    """
    every = list(candidates)
    if pin is not None and pin.snapshot_id is not None:
        named = next((s for s in every if s.id == pin.snapshot_id), None)
        considered = 1 if named is not None else 0
        return BaselineChoice(named, pin.rule.value, considered, None, pin.text())
    plain = [s for s in every if s.server.speculative is None]
    if pin is not None:
        plain = [s for s in plain if s.url == pin.url]
    pinned = pin.text() if pin is not None else None
    if not plain:
        rule = pin.rule if pin is not None else Rule.EMPTY
        return BaselineChoice(None, rule.value, 0, None, pinned)
    why = {id(s): _disqualified(s, server, wanted, before) for s in plain}
    eligible = [s for s in plain if not why[id(s)]]

    def nearest(among: list[Snapshot]) -> Rejected | None:
        """The one with the fewest differences (the newest among equals), with them."""
        if not among:
            return None
        best = min(among, key=lambda s: (len(why[id(s)]), -s.created_at, -(s.id or 0)))
        return Rejected(best, tuple(why[id(best)]))

    if not eligible:
        rule = pin.rule if pin is not None else Rule.NONE_APPLIES
        return BaselineChoice(None, rule.value, len(plain), nearest(plain), pinned)
    verdicts = {id(s): judge(s) for s in eligible}

    def rank(s: Snapshot) -> tuple[bool, bool, bool, float, int]:
        v = verdicts[id(s)]
        sized = s.protocol.max_tokens == wanted.prefer_tokens
        return (sized, v.confirmed, v.valid, s.created_at, s.id or 0)

    ordered = sorted(eligible, key=rank, reverse=True)
    chosen, verdict = ordered[0], verdicts[id(ordered[0])]
    if pin is not None:
        rule = pin.rule
    elif verdict.confirmed:
        rule = Rule.LATEST_VALID
    else:
        rule = Rule.LATEST_UNVERIFIED if verdict.valid else Rule.LATEST_STALE
    if len(ordered) > 1:
        runner_up = ordered[1]
        lost = _lost(runner_up, verdicts[id(runner_up)], chosen, verdict, wanted)
        rejected: Rejected | None = Rejected(runner_up, lost)
    else:
        rejected = nearest([s for s in plain if why[id(s)]])
    return BaselineChoice(chosen, rule.value, len(plain), rejected, pinned)


def _disqualified(
    snapshot: Snapshot, server: ServerInfo, wanted: Wanted, before: float | None
) -> list[str]:
    """What keeps a plain snapshot from being a candidate, each in a few words; none: it is."""
    found = []
    if snapshot.server.model != server.model:
        found.append(f"differs in model {snapshot.server.model}")
    backend = another_backend(snapshot.server, server)
    keys = [] if backend else differing_keys(snapshot.server.args, server.args)
    if backend:
        found.append(f"is from {backend}")
    elif keys:
        found.append("differs in " + ", ".join(f"flag {key}" for key in keys))
    protocol = wanted.differences(snapshot.protocol)
    if protocol:
        found.append("was taken with " + "; ".join(protocol))
    if before is not None and snapshot.created_at > before:
        found.append(f"was taken after {wanted.side}")
    return found


def _lost(
    loser: Snapshot, lost: Validity, chosen: Snapshot, won: Validity, wanted: Wanted
) -> tuple[str, ...]:
    """Why an eligible candidate lost to the chosen one."""
    preferred = wanted.prefer_tokens
    sizes = (loser.protocol.max_tokens, chosen.protocol.max_tokens)
    if preferred is not None and sizes[0] != sizes[1] and sizes[1] == preferred:
        return (f"was taken with max_tokens {loser.protocol.max_tokens}, not {preferred}",)
    if lost.reasons and not won.reasons:
        return (stale_words(lost),)
    if lost.unverified and won.confirmed:
        return ("is unverified: " + "; ".join(lost.unverified),)
    return (f"is older than #{chosen.id}",)
