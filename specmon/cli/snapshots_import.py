"""`specmon snapshots import [FILE …]`: put results kept in files (a store that could not take
them: `specmon.storage.saving`) into the store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from specmon.errors import SpecmonError
from specmon.storage.store import Store
from specmon.storage.unsaved import import_unsaved, pending, unsaved_dir


def register(actions: Any) -> argparse.ArgumentParser:
    """Add the `import` action to `snapshots`' actions; its parser."""
    parser: argparse.ArgumentParser = actions.add_parser(
        "import",
        help="put results kept in files (the store could not take them) into the store",
        description="Puts each result a bench, the dashboard or an A/B kept in a file, when "
        "the store could not take it (locked too long, full, read-only), into the store "
        f"(--db), all of a file or none. With no FILE, every file waiting in {unsaved_dir()}. "
        "A result already in the store is not stored twice; a file in that folder is removed "
        "once its result is in the store. Exit 0 all imported, 1 any not.",
    )
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help=f"kept results (default: those in {unsaved_dir()})"
    )
    return parser


def run(store: Store, files: list[str]) -> int:
    """Import `files` (none: every pending one) into `store`; the exit code."""
    paths = [Path(f).expanduser() for f in files] if files else pending()
    if not paths:
        print(f"Nothing to import: no results waiting in {unsaved_dir()}")
        return 0
    failed = 0
    for path in paths:
        try:
            ids = import_unsaved(store, path)
        except SpecmonError as exc:
            print(f"specmon: error: {exc}", file=sys.stderr)
            failed += 1
            continue
        if ids is None:
            print(f"{path}: already in {store.path} (imported before)")
        else:
            span = f"{ids[0]}" if len(ids) == 1 else f"{ids[0]}–{ids[-1]}"
            print(f"Imported {path}: {len(ids)} snapshot(s) ({span}) into {store.path}")
        if path.resolve().parent == unsaved_dir().resolve():
            path.unlink(missing_ok=True)  # ours, and its result is in the store now
    return 1 if failed else 0
