"""What the dashboard's `w` screen shows: the what-if of the recent probes against the baseline
that applies, and the advisor's findings (the same functions `whatif` and `check` use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specmon.analysis.ab_runs import StoredAb
from specmon.analysis.acceptance import pooled_positions
from specmon.analysis.by_load import LoadBand
from specmon.analysis.comparison import compare
from specmon.analysis.pooled import pool
from specmon.model import ServerInfo, Snapshot
from specmon.session.live import LiveState
from specmon.session.live_view import drafting_view
from specmon.session.server_session import ServerSession
from specmon.whatif.advice import Advice, advise_runs
from specmon.whatif.by_band import BandWhatIf, band_what_if
from specmon.whatif.inputs import WhatIfAnswer
from specmon.wording import TAKE_BASELINE


@dataclass(frozen=True, slots=True)
class WhatIfView:
    """The `w` screen's content."""

    info: ServerInfo | None
    answer: WhatIfAnswer
    advice: tuple[Advice, ...]
    baseline_note: str | None
    """Why the speedup column is empty (no baseline, or one that does not apply)."""
    by_load: tuple[LoadBand, ...] = ()
    """The server's own figures by its running requests (`analysis.by_load`)."""
    ab: StoredAb | None = None
    """The store's latest A/B of this configuration (`session.ab_lookup`)."""
    now_wall: float | None = None
    """When the view was made (the A/B's age)."""
    band_what_ifs: tuple[BandWhatIf, ...] = ()
    """The what-if of each load band (`whatif.by_band`)."""
    url: str | None = None
    """The watched server's URL (an A/B of another server is named with its own)."""


def live_what_if(
    live: LiveState, now_wall: float, earlier: Sequence[Snapshot], ab: StoredAb | None = None
) -> WhatIfView:
    """The what-if of the recent probes (`RECENT_PROBES`), with the baseline when it applies.

    Args:
        live: The dashboard's state.
        now_wall: The wall clock now (the baseline's age).
        earlier: The store's snapshots (other draft lengths, acceptance since earlier ones).
        ab: The store's latest A/B of this configuration, shown beside the load bands.
    """
    info = live.server.info
    bands = live.server.drafting.by_load()
    if info is None:
        no_info = WhatIfAnswer(None, "no server info yet")
        return WhatIfView(None, no_info, (), None, bands, ab, now_wall, url=live.url)
    runs = [p.figures for p in live.probes]
    if not runs:
        no_probe = WhatIfAnswer(None, "no probe yet (p resumes probing)")
        return WhatIfView(info, no_probe, (), None, bands, ab, now_wall, url=live.url)
    baseline = live.baseline.snapshot
    validity = live.baseline.validity(info, now_wall, live.gpus_now)
    base = None
    note = None
    if baseline is None:
        note = f"{live.why_no_baseline or 'no baseline yet'} — {TAKE_BASELINE}"
    if baseline is not None and validity is not None and not validity.valid:
        note = f"baseline #{baseline.id} does not apply: " + "; ".join(validity.reasons)
    elif baseline is not None:
        base = pool(baseline.runs)
    drafting, latest = drafting_view(live), live.server.window.latest
    answer, advice = advise_runs(
        info,
        runs,
        protocol=live.protocol,
        base=base,
        comparison=compare(pool(runs), base) if base is not None else None,
        earlier=earlier,
        adaptive=drafting is not None and drafting.adaptive,
        running=latest.num_running_reqs if latest is not None else None,
        traffic=live.traffic_gap(),
    )
    positions, ab_levels = pooled_positions(runs), ab.levels if ab is not None else ()
    streams = baseline.protocol.concurrency if baseline is not None else 1
    per_band = tuple(
        band_what_if(info, band, positions, ab_levels, base, streams) for band in bands
    )
    return WhatIfView(
        info, answer, tuple(advice), note, bands, ab, now_wall, per_band, url=live.url
    )


def session_what_if(session: ServerSession, now_wall: float) -> WhatIfView:
    """The `w` screen of one server's session: its state, with the earlier snapshots and the
    A/B the session reads from its store (`ServerSession.what_if_inputs`).

    Args:
        session: The server's session.
        now_wall: The wall clock now (the baseline's age; a store error's time in the log).
    """
    earlier, ab = session.what_if_inputs(now_wall)
    return live_what_if(session.live, now_wall, earlier, ab)
