"""A baseline per probe category, beside a probe that rotates several.

The dashboard's baseline is one prompt's runs, so it can only be compared with the categories'
probes pooled. A category's probes are compared with a stored baseline of the same protocol,
which names the category's prompt (`specmon bench --probe-prompts` on the plain server saves
one per category): the comparison of each category is `analysis.comparison.compare` of its
recent probes pooled (`pool_groups`) against its baseline's runs pooled, and whether a baseline
applies is `baseline_validity` under the category's protocol, as for the dashboard's baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from specmon.analysis.comparison import Comparison, compare
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.validity import LifetimeCheck, Validity, baseline_validity
from specmon.model import GpuState, Protocol, ServerInfo, Snapshot
from specmon.session.baselines import BaselineLookup
from specmon.wording import validity_mark

NOT_LOOKED_UP = "the store was not asked yet"


@dataclass(frozen=True, slots=True)
class CategorySpeedup:
    """A category's comparison with its own baseline, or why there is none."""

    comparison: Comparison | None
    baseline_id: int | None
    why_none: str | None
    """Why no speedup shows: no baseline of this category, or one that does not apply."""


class CategoryBaselines:
    """The latest stored baseline of each category's protocol, and each category's speedup."""

    def __init__(self, protocols: Mapping[str, Protocol], *, max_age_s: float) -> None:
        """Args:
        protocols: Each category's protocol (`probe_prompts.category_protocols`).
        max_age_s: Older baselines are stale.
        """
        self.protocols = dict(protocols)
        self.max_age_s = max_age_s
        self.found: dict[str, Snapshot] = {}
        self.why_none: dict[str, str] = {}

    @property
    def active(self) -> bool:
        """Whether the probe rotates several categories (else the dashboard's baseline is it)."""
        return len(self.protocols) > 1

    def look_up(
        self, lookup: Callable[[ServerInfo, Protocol], BaselineLookup], info: ServerInfo
    ) -> None:
        """Ask the store for each category's baseline (`lookup_baseline` under its protocol)."""
        for category, protocol in self.protocols.items():
            answer = lookup(info, protocol)
            if answer.baseline is None:
                self.found.pop(category, None)
                self.why_none[category] = answer.why_none()
            else:
                self.found[category] = answer.baseline
                self.why_none.pop(category, None)

    def validity(
        self,
        category: str,
        watched: ServerInfo,
        now: float,
        lifetime: Callable[[Snapshot], LifetimeCheck],
        gpu: GpuState | None,
    ) -> Validity | None:
        """Whether the category's baseline applies now (`baseline_validity` under its protocol);
        None without one."""
        snapshot = self.found.get(category)
        if snapshot is None:
            return None
        return baseline_validity(
            snapshot,
            watched,
            now=now,
            lifetime=lifetime(snapshot),
            max_age_s=self.max_age_s,
            protocol=self.protocols[category],
            gpu=gpu,
        )

    def speedups(
        self,
        recent: Mapping[str, Pooled],
        validity: Callable[[str], Validity | None],
    ) -> dict[str, CategorySpeedup]:
        """Each category's recent probes (pooled) against its own baseline where one applies."""
        result: dict[str, CategorySpeedup] = {}
        for category, now in recent.items():
            snapshot = self.found.get(category)
            if snapshot is None:
                why = self.why_none.get(category, NOT_LOOKED_UP)
                result[category] = CategorySpeedup(None, None, why)
                continue
            valid = validity(category)
            if valid is not None and not valid.valid:
                mark = validity_mark(valid)
                result[category] = CategorySpeedup(
                    None, snapshot.id, f"baseline #{snapshot.id} of its prompt: {mark}"
                )
                continue
            comparison = compare(now, pool(snapshot.runs))
            untimed = None if comparison else "no timed probe of it yet"
            result[category] = CategorySpeedup(comparison, snapshot.id, untimed)
        return result
