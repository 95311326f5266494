"""`measure_what_if`: one bench with `take_snapshot`, the store's baseline and earlier snapshots,
and the what-if predicted from them (`whatif.inputs.predict`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from specmon.analysis.baseline_rule import Pin
from specmon.analysis.pooled import pool
from specmon.analysis.validity import Validity, snapshot_validity
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, ServerInfo, Snapshot
from specmon.session.baselines import BaselineLookup, check_lifetime, find_baseline
from specmon.sources.http import make_client
from specmon.sources.workers import open_connection
from specmon.storage.saving import Outcome, save_or_keep
from specmon.storage.store import Store
from specmon.storage.unsaved import Unsaved
from specmon.target import Target
from specmon.whatif.inputs import WhatIfAnswer, predict, refusal
from specmon.wording import stale_words


@dataclass(frozen=True, slots=True)
class WhatIfReport:
    """What `specmon whatif` measured and predicted."""

    url: str
    server: ServerInfo
    snapshot: Snapshot | None
    """The bench at the server's current draft length (saved, with its id); None when the
    what-if model does not apply to the server (`answer.reason`)."""
    answer: WhatIfAnswer
    baseline: Snapshot | None = None
    validity: Validity | None = None
    baseline_note: str | None = None
    """Why no baseline is used (none stored, or stale: the reasons), or what could not be
    verified of the one used; None when a baseline applies without doubt."""
    saving: Outcome | None = None
    """What became of the bench: saved (its id), or kept in a file when the store did not take
    it (`storage.saving.save_or_keep`); None without a bench."""


def baseline_for(
    lookup: BaselineLookup, validity: Validity | None
) -> tuple[Snapshot | None, str | None]:
    """The baseline a what-if may use and, when it may not (or its server's lifetime could not
    be verified), why (one line)."""
    baseline = lookup.baseline
    if baseline is None:
        return None, lookup.why_none()
    if validity is not None and not validity.valid:
        return None, f"baseline #{baseline.id} {stale_words(validity)}"
    if validity is not None and validity.unverified:
        return baseline, "UNVERIFIED: " + "; ".join(validity.unverified)
    return baseline, None


async def measure_what_if(
    target: Target,
    store: Store,
    protocol: Protocol,
    *,
    max_age_s: float,
    asked_tokens: int | None = None,
    gpu_metrics: str | None = None,
    say: Callable[[str], None] = lambda _line: None,
    wall: Callable[[], float] = time.time,
    pin: Pin | None = None,
) -> WhatIfReport:
    """Bench the server at its draft length and predict the others.

    The store's baseline for the server sets the protocol (runs compare only like for like);
    the bench is saved, so that a later what-if at another draft length fits its cycle model
    through both.

    Args:
        target: The speculative server.
        store: Baselines and earlier snapshots; the bench is saved here.
        protocol: Runs, warm-up, tokens and prompt when no baseline sets them.
        max_age_s: Older baselines are stale.
        asked_tokens: The tokens the user asked for (`--max-tokens`), None if not: set aside,
            and said so, when the baseline's protocol takes another count.
        gpu_metrics: A DCGM-style endpoint for the GPUs.
        say: One-line notes as the bench goes.
        wall: Wall clock.
        pin: The baseline the user named (`--baseline ID|URL`).

    Returns:
        The report; without a bench when the what-if model does not apply to the server.

    Raises:
        SourceError: The server failed (typed).
        BenchInvalid: The server restarted mid-bench, or its stream arrived buffered.
        StoreError: The store could not be read or written.
    """
    async with open_connection(target, make_client) as connection:
        info = await connection.info()
    why = refusal(info)
    if why is not None:
        return WhatIfReport(target.url, info, None, WhatIfAnswer(None, why))
    # The one rule, as `check` asks it: every candidate's server read first.
    lookup = await find_baseline(
        store, info, target, pin=pin, tokens=asked_tokens, max_age_s=max_age_s, now=wall()
    )
    if lookup.baseline is not None:
        used = lookup.baseline.protocol
        if asked_tokens is not None and asked_tokens != used.max_tokens:
            say(
                f"bench: {used.max_tokens} tokens a run, the protocol of baseline "
                f"#{lookup.baseline.id} (--max-tokens {asked_tokens} set aside: runs compare "
                "only like for like)"
            )
        protocol = replace(
            protocol, max_tokens=used.max_tokens, temperature=used.temperature, prompt=used.prompt
        )
    say(f"Measuring {target.url} at its current draft length")
    snapshot = await take_snapshot(
        target,
        protocol,
        kind=SnapshotKind.RUN,
        label="whatif",
        gpu_metrics=gpu_metrics,
        say=say,
        wall=wall,
    )
    validity = None
    if lookup.baseline is not None:
        lifetime = await check_lifetime(lookup.baseline, target, speculative=True)
        validity = snapshot_validity(
            lookup.baseline, snapshot, max_age_s=max_age_s, lifetime=lifetime
        )
    baseline, note = baseline_for(lookup, validity)
    earlier = [s for s in store.list() if s.server.speculative is not None]
    base = pool(baseline.runs) if baseline is not None else None
    answer = predict(snapshot.server, snapshot.protocol, snapshot.runs, base, earlier)
    # A lock is waited for (Ctrl-C: the way out); a bench the store cannot take is kept in a file.
    saving = await save_or_keep(store, Unsaved((snapshot,)), say=say)
    if saving.ids is not None:
        snapshot = replace(snapshot, id=saving.ids[0])
    return WhatIfReport(
        target.url, snapshot.server, snapshot, answer, baseline, validity, note, saving
    )
