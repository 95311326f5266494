"""Finished results the store could not take, kept in a file until `specmon snapshots import`.

A bench, the dashboard's `b` or `s`, or a whole `ab` run that meets a store it cannot write
(another process's lock past the wait, the way out taken, a full disk, a read-only file) is
written here instead of dropped: one JSON file, 0600, in `unsaved_dir()` (0700;
~/.local/share/specmon/unsaved on Linux), or the temp folder when that cannot be written. Each
snapshot is its store record (`serialize.snapshot_to_record`, the `record` column itself), so
the file says no more and no less than the store would have; an A/B's file says the round, side
and configuration of each too, so that `latest_ab` finds it once imported.

    {"format": "specmon-unsaved", "version": 1, "written_at": …, "store": "PATH",
     "why": "…", "snapshots": [record, …], "ab": [{"round": 1, "side": "baseline",
     "config": null}, …] or null}
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from specmon.analysis.ab_runs import AbRun, Side
from specmon.errors import SpecmonError
from specmon.model import Snapshot
from specmon.storage.private_files import (
    close_quietly,
    open_private,
    private_dir,
    write_private,
)
from specmon.storage.serialize import RecordError, snapshot_from_record, snapshot_to_record
from specmon.storage.store import Store

FORMAT = "specmon-unsaved"
VERSION = 1


class UnsavedError(SpecmonError):
    """An unsaved-result file that cannot be read or put into the store (one line)."""


def unsaved_dir() -> Path:
    """Where results the store could not take are kept: specmon's user data folder, beside the
    default store (~/.local/share/specmon/unsaved on Linux)."""
    return platformdirs.user_data_path("specmon", appauthor=False) / "unsaved"


@dataclass(frozen=True, slots=True)
class Unsaved:
    """A finished result waiting for the store: plain snapshots, or an A/B's benches."""

    snapshots: tuple[Snapshot, ...]
    ab: tuple[AbRun, ...] | None = None
    """The A/B's benches (their snapshots are `snapshots`), or None for plain snapshots."""

    @classmethod
    def of_ab(cls, runs: Sequence[AbRun]) -> Unsaved:
        """An A/B's benches."""
        return cls(tuple(run.snapshot for run in runs), tuple(runs))

    def describe(self) -> str:
        """What it is, for a message: "the A/B's 12 snapshots", "the snapshot"."""
        n = len(self.snapshots)
        what = f"{n} snapshots" if n != 1 else "snapshot"
        return f"the A/B's {what}" if self.ab is not None else f"the {what}"

    def save(self, store: Store, *, wait: float | None = None) -> list[int]:
        """Put it into `store` in one transaction (`Store.save_ab` or `save_all`); its ids.

        Raises:
            StoreError: As `Store.save_all`; nothing was stored.
        """
        if self.ab is not None:
            return store.save_ab(self.ab, wait=wait)
        return store.save_all(self.snapshots, wait=wait)

    def to_data(self, store: Path | None, why: str, written_at: float) -> dict[str, Any]:
        """The file's content."""
        ab = None
        if self.ab is not None:
            ab = [{"round": r.round, "side": r.side.value, "config": r.config} for r in self.ab]
        return {
            "format": FORMAT,
            "version": VERSION,
            "written_at": written_at,
            "store": None if store is None else str(store),
            "why": why,
            "snapshots": [snapshot_to_record(s) for s in self.snapshots],
            "ab": ab,
        }


def keep_unsaved(
    unsaved: Unsaved,
    why: str,
    store: Path | None,
    *,
    folder: Path | None = None,
    wall: float | None = None,
) -> Path:
    """Write `unsaved` to a new private file in `folder` (default `unsaved_dir()`), or the temp
    folder when that cannot be written; its path.

    Raises:
        OSError: Neither could be written (both disks full); the error of the last try.
    """
    wall = time.time() if wall is None else wall
    text = json.dumps(unsaved.to_data(store, why, wall), sort_keys=True) + "\n"
    stem = time.strftime("unsaved-%Y%m%d-%H%M%S", time.localtime(wall)) + f"-{os.getpid()}"
    try:
        return _write_new(private_dir(folder or unsaved_dir()), stem, text)
    except OSError:
        # mkstemp: a new, unguessable name, 0600, O_EXCL, in the shared temp folder.
        fd, name = tempfile.mkstemp(prefix=f"specmon-{stem}-", suffix=".json")
        os.close(fd)
        path = Path(name)
        try:
            write_private(path, text)
        except OSError:
            path.unlink(missing_ok=True)
            raise
        return path


def _write_new(folder: Path, stem: str, text: str) -> Path:
    """`text` in a new file `stem[-N].json` of `folder` (never one that exists)."""
    for n in range(1, 1000):
        path = folder / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
        try:
            file = open_private(path, "x", encoding="utf-8")
        except FileExistsError:
            continue
        try:
            file.write(text)
            file.flush()
        except OSError:
            close_quietly(file)
            path.unlink(missing_ok=True)  # half a file would only mislead the import
            raise
        file.close()
        return path
    raise FileExistsError(f"no free name for {stem} in {folder}")


def read_unsaved(path: Path) -> Unsaved:
    """The result kept in `path`.

    Raises:
        UnsavedError: It cannot be read, or is not such a file (one line naming it).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UnsavedError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise UnsavedError(f"{path} is not an unsaved specmon result (not JSON)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UnsavedError(f"{path} is not an unsaved specmon result")
    version = data.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise UnsavedError(f"{path} was written by a newer specmon (format {version}): upgrade")
    try:
        records = data.get("snapshots")
        if not isinstance(records, list) or not records:
            raise RecordError("snapshots: expected a non-empty list")
        snapshots = tuple(snapshot_from_record(r) for r in records)
        return Unsaved(snapshots, _ab(data.get("ab"), snapshots))
    except (RecordError, ValueError, TypeError, RecursionError) as exc:
        raise UnsavedError(f"{path} cannot be read back: {exc}") from None


def _ab(data: Any, snapshots: tuple[Snapshot, ...]) -> tuple[AbRun, ...] | None:
    if data is None:
        return None
    if not isinstance(data, list) or len(data) != len(snapshots):
        raise RecordError("ab: expected one entry per snapshot")
    runs = []
    for entry, snapshot in zip(data, snapshots, strict=True):
        if not isinstance(entry, dict):
            raise RecordError("ab: expected objects")
        round_, side, config = entry.get("round"), entry.get("side"), entry.get("config")
        if not isinstance(round_, int) or isinstance(round_, bool):
            raise RecordError(f"ab.round: expected an integer, got {round_!r}")
        if config is not None and not isinstance(config, str):
            raise RecordError(f"ab.config: expected text, got {config!r}")
        if side not in {s.value for s in Side}:
            raise RecordError(f"ab.side: expected baseline or speculative, got {side!r}")
        runs.append(AbRun(round_, Side(side), snapshot, config))
    return tuple(runs)


def import_unsaved(store: Store, path: Path) -> list[int] | None:
    """Put the result kept in `path` into `store` (all or none); its new ids, or None when it
    is there already (imported before). The file is left for the caller to remove.

    Raises:
        UnsavedError: The file cannot be read.
        StoreError: The store could not take it; nothing was stored.
    """
    unsaved = read_unsaved(path)
    if all(store.holds(s) for s in unsaved.snapshots):
        return None
    return unsaved.save(store)


def pending() -> list[Path]:
    """The files waiting in `unsaved_dir()`, oldest first."""
    folder = unsaved_dir()
    if not folder.is_dir():
        return []
    found = [p for p in folder.glob("unsaved-*.json") if p.is_file()]
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))
