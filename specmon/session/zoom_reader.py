"""Reads a span of the store's history for the zoomed sparklines (`history_zoom`), in a worker
thread with a connection of its own."""

from __future__ import annotations

from pathlib import Path

from specmon.history import Figure, MarkKind
from specmon.session.history_zoom import COLUMNS, Zoomed, ZoomLevel, filled, mark_columns
from specmon.session.window import HISTORY_S
from specmon.storage import history_store
from specmon.storage.store import Store


def read_zoom(path: Path, url: str, level: ZoomLevel, now: float) -> Zoomed:
    """Read `level`'s span of `url`'s history from the store at `path` (never creating one).

    Raises:
        StoreError: The store cannot be read.
    """
    with Store(path, create=False) as store:
        if level.span_s is not None:
            start = now - level.span_s
        else:
            first = history_store.first_at(store, url)
            start = min(first, now - 1) if first is not None else now - HISTORY_S
        decode = history_store.columns(store, url, Figure.DECODE, start, now, COLUMNS)
        accept = history_store.columns(store, url, Figure.ACCEPT, start, now, COLUMNS)
        marks = history_store.marks(store, url, start, now)
    marks = [m for m in marks if m.kind != MarkKind.WATCH]  # specmon's, not the server's
    step = (now - start) / COLUMNS
    return Zoomed(
        level,
        filled(decode),
        filled(accept),
        mark_columns(marks, start, step),
        tuple(m.text for m in marks),
    )
