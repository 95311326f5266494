"""Saving a finished result so that nothing finished is lost (docs/reliability.md).

Another process holding the store's write lock is waited for, in short tries (so that Ctrl-C,
or a cancelled dashboard bench, is answered within one), saying how long it has waited, up to a
patience; if the store still cannot take the result (the lock outlasted the patience, the way
out was taken, the disk is full, the file read-only), the result is written to a private file
(`specmon.storage.unsaved`) that `specmon snapshots import` puts into the store later. `bench`,
`ab` and the dashboard's `b` and `s` all save through `save_or_keep`.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specmon.storage.store import Store, StoreError, StoreLocked, default_db_path
from specmon.storage.unsaved import Unsaved, keep_unsaved
from specmon.wording import duration

DEFAULT_PATIENCE_S = 600.0
"""How long a save waits for another process's lock before keeping the result in a file."""
ATTEMPT_S = 1.0
"""How long each try waits for the lock: the way out (Ctrl-C) is answered within it."""
PROGRESS_EVERY_S = 15.0
"""How often a waiting save says so again."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of a finished result: saved (its ids), or kept in a file (or neither)."""

    what: str
    """What was saved, for messages ("the snapshot", "the A/B's 12 snapshots")."""
    ids: list[int] | None = None
    """The new snapshots' ids, when the store took them."""
    why: str | None = None
    """Why the store did not take them."""
    kept: Path | None = None
    """The file they were kept in instead."""
    interrupted: bool = False
    """The way out was taken while waiting (whether or not the try in flight saved them)."""
    text: str | None = None
    """The result as the file would have held it, when no file could be written either."""
    store: Path | None = None
    """The store it was meant for (named in the import command unless it is the default)."""

    @property
    def saved(self) -> bool:
        """Whether the store took them."""
        return self.ids is not None

    def message(self) -> str:
        """One line for a result not saved: why, and where it is kept (or that it is not)."""
        cause = f"interrupted while waiting ({self.why})" if self.interrupted else self.why
        if self.kept is not None:
            db = (
                ""
                if self.store in (None, default_db_path())
                else f" --db {shlex.quote(str(self.store))}"
            )
            return (
                f"could not save {self.what}: {cause}; kept in {self.kept}: put it into the "
                f"store with specmon snapshots import{db} {shlex.quote(str(self.kept))}"
            )
        return f"could not save {self.what}: {cause}; and it could not be kept in a file"


async def save_or_keep(
    store: Store | None,
    unsaved: Unsaved,
    *,
    say: Callable[[str], None] = lambda _line: None,
    patience_s: float | None = None,
    attempt_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    folder: Path | None = None,
    way_out: str = "Ctrl-C",
) -> Outcome:
    """Save `unsaved` into `store`, waiting up to `patience_s` (default `DEFAULT_PATIENCE_S`)
    for another process's lock, in tries of `attempt_s` (`ATTEMPT_S`), `say`ing so every
    `PROGRESS_EVERY_S` (naming `way_out`, the key that stops waiting); else keep it in a file
    (in `folder`, default `unsaved.unsaved_dir()`).

    Cancellation (Ctrl-C) while waiting is the way out: the try in flight ends within
    `attempt_s` and, if it did not save, the result is kept; either way this returns, with
    `interrupted` set, rather than raising (a caller that must end on cancellation re-raises).
    """
    patience_s = DEFAULT_PATIENCE_S if patience_s is None else patience_s
    attempt_s = ATTEMPT_S if attempt_s is None else attempt_s
    what = unsaved.describe()
    if store is None:
        return _keep(unsaved, what, "no snapshot store", None, folder)
    started = clock()
    said: float | None = None
    while True:
        tried = time.monotonic()
        attempt = asyncio.ensure_future(asyncio.to_thread(unsaved.save, store, wait=attempt_s))
        try:
            try:
                return Outcome(what, ids=await asyncio.shield(attempt))
            except StoreLocked:
                waited = clock() - started
                if waited >= patience_s:
                    why = f"{store.path} stayed locked by another process for {duration(waited)}"
                    return _keep(unsaved, what, why, store.path, folder)
                if said is None or clock() - said >= PROGRESS_EVERY_S:
                    say(
                        f"{store.path} is locked by another process: waiting to save {what} "
                        f"({duration(waited)} of {duration(patience_s)}; {way_out} keeps it in "
                        "a file instead)"
                    )
                    said = clock()
                # SQLite may answer "busy" without waiting: never spin.
                await asyncio.sleep(max(0.0, attempt_s - (time.monotonic() - tried)))
            except StoreError as exc:
                return _keep(unsaved, what, str(exc), store.path, folder)
        except asyncio.CancelledError:
            why = f"{store.path} was locked by another process"
            if not attempt.done():
                try:  # the try in flight ends within attempt_s: its answer decides
                    return Outcome(what, ids=await attempt, interrupted=True, why=why)
                except StoreError:
                    pass
            elif attempt.exception() is None:
                return Outcome(what, ids=attempt.result(), interrupted=True, why=why)
            return _keep(unsaved, what, why, store.path, folder, interrupted=True)


def _keep(
    unsaved: Unsaved,
    what: str,
    why: str,
    store: Path | None,
    folder: Path | None,
    *,
    interrupted: bool = False,
) -> Outcome:
    try:
        kept = keep_unsaved(unsaved, why, store, folder=folder)
    except OSError as exc:
        text = json.dumps(unsaved.to_data(store, why, time.time()), sort_keys=True)
        why = f"{why}; no file could be written ({exc.strerror or exc})"
        return Outcome(what, why=why, interrupted=interrupted, text=text, store=store)
    return Outcome(what, why=why, kept=kept, interrupted=interrupted, store=store)
