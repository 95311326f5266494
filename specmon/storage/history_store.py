"""The lasting history in the store (`store.Store`'s `history` and `history_marks` tables).

Readings go in as they come; past `RAW_S` they become `BUCKET_S` buckets (mean, low, high,
count); `maintain` also drops what is older than the age limit and, past the size cap, the
oldest readings. Readers ask for a range summarised into columns (the zoomed sparklines), into
minutes (drift), or for its readings (`specmon history`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from specmon.analysis.drift import MINUTE_S
from specmon.history import Figure, Mark, MarkKind, Point, Reading
from specmon.storage.store import Store

RAW_S = 3600.0
"""Readings younger than this are kept as they came."""
BUCKET_S = 60.0
"""Older ones are kept as buckets of this many seconds."""
DEFAULT_DAYS = 7.0
DEFAULT_MB = 50.0
PRUNE_SHARE = 0.1
"""Over the size cap, this share of the oldest readings goes at a time."""
MAX_PRUNE_ROUNDS = 30


@dataclass(frozen=True, slots=True)
class Limits:
    """How much history is kept: by age and by size (the store's used pages)."""

    max_age_s: float = DEFAULT_DAYS * 86400
    max_bytes: int = int(DEFAULT_MB * 1024 * 1024)


def append(store: Store, points: Sequence[Point], marks: Sequence[Mark] = ()) -> None:
    """Write readings and marks in one transaction."""
    with store.writing() as db:
        db.executemany(
            "INSERT INTO history (target, lifetime, at, span, figure, value, low, high, count)"
            " VALUES (?, ?, ?, 0, ?, ?, ?, ?, 1)",
            [
                (p.target, p.lifetime, p.at, p.figure.value, p.value, p.value, p.value)
                for p in points
                if math.isfinite(p.value)
            ],
        )
        db.executemany(
            "INSERT INTO history_marks (target, at, kind, text) VALUES (?, ?, ?, ?)",
            [(m.target, m.at, m.kind.value, m.text) for m in marks],
        )


def maintain(store: Store, now: float, limits: Limits) -> None:
    """Bucket readings older than `RAW_S`, drop those past the age limit, keep under the cap."""
    # On a bucket boundary: a bucket is made once, from every reading of its span.
    cutoff = math.floor((now - RAW_S) / BUCKET_S) * BUCKET_S
    with store.writing() as db:
        db.execute(
            "INSERT INTO history (target, lifetime, at, span, figure, value, low, high, count)"
            " SELECT target, lifetime, CAST(at / :b AS INTEGER) * :b, :b, figure,"
            " SUM(value * count) / SUM(count), MIN(low), MAX(high), SUM(count)"
            " FROM history WHERE span = 0 AND at < :cutoff"
            " GROUP BY target, lifetime, figure, CAST(at / :b AS INTEGER)",
            {"b": BUCKET_S, "cutoff": cutoff},
        )
        db.execute("DELETE FROM history WHERE span = 0 AND at < ?", (cutoff,))
        oldest = now - limits.max_age_s
        db.execute("DELETE FROM history WHERE at < ?", (oldest,))
        db.execute("DELETE FROM history_marks WHERE at < ?", (oldest,))
    for _ in range(MAX_PRUNE_ROUNDS):
        if used_bytes(store) <= limits.max_bytes:
            return
        with store.writing() as db:
            (rows,) = db.execute("SELECT COUNT(*) FROM history").fetchone()
            if not rows:
                return
            db.execute(
                "DELETE FROM history WHERE rowid IN"
                " (SELECT rowid FROM history ORDER BY at LIMIT ?)",
                (max(1, int(rows * PRUNE_SHARE)),),
            )


def used_bytes(store: Store) -> int:
    """The store's pages in use (freed ones are reused before the file grows)."""
    (pages,), (free,), (size,) = (
        store.read(f"PRAGMA {name}")[0] for name in ("page_count", "freelist_count", "page_size")
    )
    return int((pages - free) * size)


def readings(store: Store, target: str, figure: Figure, start: float, end: float) -> list[Reading]:
    """The readings of one figure from `start` to `end`, oldest first."""
    rows = store.read(
        "SELECT at, span, value, low, high, count, lifetime FROM history"
        " WHERE target = ? AND figure = ? AND at >= ? AND at < ? ORDER BY at",
        (target, figure.value, start, end),
    )
    return [Reading(*row) for row in rows]


def minute_readings(
    store: Store, target: str, figure: Figure, start: float, end: float
) -> list[Reading]:
    """The readings of one figure from `start` to `end` as one bucket per minute and server
    lifetime (from its first reading in the minute; mean weighed by count, lowest, highest),
    oldest first: what drift is judged on (`analysis.drift` takes minutes' means), in a
    minute's memory, not a reading's (a day of 1 s readings is ~170,000 rows, ~30 MiB read
    whole; its minutes, 1,440)."""
    rows = store.read(
        "SELECT MIN(at), MAX(at + span) - MIN(at), SUM(value * count) / SUM(count), MIN(low),"
        " MAX(high), SUM(count), lifetime FROM history"
        " WHERE target = ? AND figure = ? AND at >= ? AND at < ?"
        " GROUP BY CAST(at / ? AS INTEGER), lifetime ORDER BY MIN(at)",
        (target, figure.value, start, end, MINUTE_S),
    )
    return [Reading(*row) for row in rows]


def columns(
    store: Store, target: str, figure: Figure, start: float, end: float, count: int
) -> list[float | None]:
    """The range cut into `count` columns, each its readings' mean (None: none in it)."""
    step = (end - start) / count
    rows = store.read(
        "SELECT CAST((at - :start) / :step AS INTEGER) AS col, SUM(value * count) / SUM(count)"
        " FROM history WHERE target = :target AND figure = :figure"
        " AND at >= :start AND at < :end GROUP BY col",
        {"start": start, "step": step, "end": end, "target": target, "figure": figure.value},
    )
    values: list[float | None] = [None] * count
    for col, value in rows:
        values[min(int(col), count - 1)] = value
    return values


def column_starts(
    store: Store, target: str, start: float, end: float, count: int
) -> list[float | None]:
    """The range cut into `count` columns as `columns` cuts it, each its first reading's time,
    of any figure (None: none in it): what a column is labelled by, not the range's cut."""
    step = (end - start) / count
    rows = store.read(
        "SELECT CAST((at - :start) / :step AS INTEGER) AS col, MIN(at) FROM history"
        " WHERE target = :target AND at >= :start AND at < :end GROUP BY col",
        {"start": start, "step": step, "end": end, "target": target},
    )
    firsts: list[float | None] = [None] * count
    for col, at in rows:
        i = min(int(col), count - 1)
        firsts[i] = at if firsts[i] is None else min(at, firsts[i])
    return firsts


def marks(store: Store, target: str, start: float, end: float) -> list[Mark]:
    """The marks from `start` to `end`, oldest first."""
    rows = store.read(
        "SELECT target, at, kind, text FROM history_marks"
        " WHERE target = ? AND at >= ? AND at < ? ORDER BY at",
        (target, start, end),
    )
    return [Mark(t, at, MarkKind(kind), text) for t, at, kind, text in rows]


def first_at(store: Store, target: str) -> float | None:
    """When the target's history begins (None: it has none)."""
    rows = store.read(
        "SELECT MIN(at) FROM (SELECT MIN(at) AS at FROM history WHERE target = ?"
        " UNION ALL SELECT MIN(at) FROM history_marks WHERE target = ?)",
        (target, target),
    )
    return rows[0][0] if rows else None


def targets(store: Store) -> list[str]:
    """The servers the store has a history of."""
    return [row[0] for row in store.read("SELECT DISTINCT target FROM history ORDER BY target")]
