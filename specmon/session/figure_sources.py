"""Where the last probe's acceptance figures came from, as the `i` screen says it: the server's
per-request details, or today's path (its counters while the probe ran alone, or the stream's
chunks), and, without details, how this kind of server would send them."""

from __future__ import annotations

from specmon.backend_facts import facts
from specmon.model import AcceptSource, PositionSource, RunFigures

PER_REQUEST = "per-request details (the server's own account of this probe)"
ALONE = "counters while the probe ran alone"
_POSITIONS = {
    PositionSource.HISTOGRAM: PER_REQUEST,
    PositionSource.DRAFTING_HISTOGRAM: PER_REQUEST,
    PositionSource.COUNTERS: ALONE,
    PositionSource.CHUNKS: "the stream's chunks, one per verify step",
}
_ACCEPT = {AcceptSource.DETAILS: PER_REQUEST, AcceptSource.COUNTERS: ALONE}
NO_POSITIONS = (
    "— no per-request details, the counters were not the probe's alone, and its chunks were "
    "not one per verify step"
)
NO_ACCEPT = "— no per-request details, and the counters were not the probe's alone"


def probe_figure_sources(
    figures: RunFigures | None, backend: str | None
) -> tuple[tuple[str, str], ...]:
    """(figure, where it came from) for the last probe's acceptance figures; empty before a
    probe that verified drafts."""
    if figures is None or figures.verify_ct is None:
        return ()
    position = figures.position_source
    rows = [
        ("acceptance by position", _POSITIONS[position] if position else NO_POSITIONS),
        (
            "server accept length",
            _ACCEPT[figures.server_accept_source] if figures.server_accept_source else NO_ACCEPT,
        ),
    ]
    per_request = figures.server_accept_source == AcceptSource.DETAILS or (
        position is not None and position.per_request
    )
    details_off = facts(backend).details_off if backend is not None else None
    if not per_request and details_off is not None:
        rows.append(("per-request details", details_off))
    return tuple(rows)
