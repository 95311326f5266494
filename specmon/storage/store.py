"""SQLite persistence of snapshots (docs/design.md §2): stdlib `sqlite3`, WAL, a schema version.

One row per completed snapshot. The indexed columns (url, fingerprint, speculative …) are copies
of what the record says, for queries; the `record` column (JSON, `serialize.snapshot_to_record`)
is the truth and is what `get` and `list` read back.

Every sqlite3 failure leaves this module as a `StoreError` with a one-line message a person can
act on; the CLI prints it as it is.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import platformdirs

from specmon.analysis.ab_runs import AbRun, Side
from specmon.analysis.validity import fingerprint, protocol_differences
from specmon.errors import SpecmonError
from specmon.model import Protocol, Snapshot
from specmon.storage.private_files import open_private, private_dir
from specmon.storage.serialize import RecordError, snapshot_from_record, snapshot_to_record

DEFAULT_TIMEOUT_S = 5.0
"""How long a write waits for another process's lock before `StoreLocked`."""

# Schema migrations: MIGRATIONS[i] takes the file from user_version i to i + 1, in one
# transaction. Append new steps; never edit a released one (files in the wild ran it).
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """
        CREATE TABLE snapshots (
            id INTEGER PRIMARY KEY,
            created_at REAL NOT NULL,
            url TEXT NOT NULL,
            label TEXT,
            backend TEXT,
            model TEXT,
            version TEXT,
            speculative INTEGER NOT NULL,
            fingerprint TEXT NOT NULL,
            record TEXT NOT NULL
        )
        """,
        "CREATE INDEX snapshots_url_created ON snapshots (url, created_at)",
        "CREATE INDEX snapshots_fingerprint ON snapshots (fingerprint)",
    ),
    (
        # The dashboard's lasting history (`specmon.storage.history_store`): figures as they come
        # (span 0) and, past an hour, their buckets (span > 0: mean, low, high of `count` readings).
        """
        CREATE TABLE history (
            target TEXT NOT NULL,
            lifetime REAL,
            at REAL NOT NULL,
            span REAL NOT NULL,
            figure TEXT NOT NULL,
            value REAL NOT NULL,
            low REAL NOT NULL,
            high REAL NOT NULL,
            count INTEGER NOT NULL
        )
        """,
        "CREATE INDEX history_target_figure_at ON history (target, figure, at)",
        "CREATE INDEX history_span_at ON history (span, at)",
        """
        CREATE TABLE history_marks (
            target TEXT NOT NULL,
            at REAL NOT NULL,
            kind TEXT NOT NULL,
            text TEXT NOT NULL
        )
        """,
        "CREATE INDEX history_marks_target_at ON history_marks (target, at)",
    ),
    (
        # `ab`'s benches: which A/B (its first snapshot's id), round, side and sweep
        # configuration each snapshot was, so its levels and crossover read back
        # (`latest_ab`) without parsing labels. Snapshots saved before hold no row.
        """
        CREATE TABLE ab_benches (
            snapshot_id INTEGER PRIMARY KEY REFERENCES snapshots (id),
            ab INTEGER NOT NULL,
            round INTEGER NOT NULL,
            side TEXT NOT NULL,
            config TEXT
        )
        """,
        "CREATE INDEX ab_benches_ab ON ab_benches (ab)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(SpecmonError):
    """The snapshot store could not be used."""


class StoreUnavailable(StoreError):
    """The store file cannot be created, opened or written (permissions, read-only media)."""


class StoreMissing(StoreError):
    """A store to read from does not exist (and is not created: a mistyped path)."""


class StoreLocked(StoreError):
    """Another process held the store's write lock for longer than the timeout."""


class StoreCorrupt(StoreError):
    """The file is not a specmon store: not SQLite, damaged, or another program's database."""


class StoreTooNew(StoreError):
    """The file's schema was written by a newer specmon."""


class BadRecord(StoreError):
    """A stored snapshot's record cannot be read back."""


class SnapshotNotFound(StoreError, KeyError):
    """No snapshot has the requested id."""

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument (quoted); keep the plain one-line message.
        return str(self.args[0]) if self.args else ""


def _record_text(snapshot: Snapshot) -> str:
    """The `record` column of a snapshot: its lossless record as JSON."""
    return json.dumps(snapshot_to_record(snapshot), sort_keys=True)


def default_db_path() -> Path:
    """Where the store lives unless `--db` says otherwise: the platform's user data dir."""
    return platformdirs.user_data_path("specmon", appauthor=False) / "specmon.db"


class Store:
    """The snapshot store: one SQLite file, safe to share between processes.

    Use it as a context manager, or call `close()`. Writes wait up to `timeout` seconds for
    another process's lock. The connection may be used from another thread than the one that
    opened it (Textual runs blocking work in thread workers), one thread at a time.

    Attributes:
        path: The database file.
        skipped: Why rows were skipped by the last `list` or `latest_baseline` (one line each):
            rows whose record could not be read back.
    """

    def __init__(
        self, path: Path | str, *, timeout: float = DEFAULT_TIMEOUT_S, create: bool = True
    ) -> None:
        """Open (creating if needed) the store at `path` and bring its schema up to date.

        Args:
            path: The database file, or ":memory:".
            timeout: Seconds a write waits for another process's lock.
            create: Create the file (and its directory) if missing; a command that only reads
                gives False, so that a mistyped path is an error, not a new empty store.

        Raises:
            StoreMissing: `create` is false and there is no such file.
            StoreUnavailable: The file or its directory cannot be created or opened.
            StoreLocked: Another process kept the file locked for `timeout` seconds.
            StoreCorrupt: The file is not a specmon store.
            StoreTooNew: The file was written by a newer specmon.
        """
        self.path = Path(path)
        self.skipped: builtins.list[str] = []
        self._timeout = timeout
        if str(path) != ":memory:" and not create and not self.path.is_file():
            why = "no such file" if self.path.parent.is_dir() else "no such folder"
            raise StoreMissing(f"no snapshot store at {self.path} ({why})")
        if str(path) != ":memory:":
            try:
                private_dir(self.path.parent)
                if not self.path.exists():
                    # Made here, 0600: SQLite gives its -wal and -shm the database's mode.
                    open_private(self.path, "a").close()
            except OSError as error:
                raise StoreUnavailable(
                    f"cannot create {self.path}: {error.strerror or error}"
                ) from None
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, so every transaction's
            # extent is visible here rather than implied by the module.
            self._db = sqlite3.connect(
                path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise self._translate(error) from None
        try:
            with self._errors():
                # Migrate (which refuses foreign and newer files) before switching to WAL: the
                # journal mode is persistent, and a file we refuse must be left as it was.
                self._migrate()
                self._db.execute("PRAGMA journal_mode=WAL").fetchone()
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def save(self, snapshot: Snapshot) -> int:
        """Store a completed snapshot in one transaction, committed before returning.

        Returns:
            The new snapshot's id.

        Raises:
            ValueError: The snapshot has no runs (an interrupted bench stores nothing).
            StoreError: The write failed; nothing was stored.
        """
        return self.save_all([snapshot])[0]

    def save_all(
        self, snapshots: Sequence[Snapshot], *, wait: float | None = None
    ) -> builtins.list[int]:
        """Store completed snapshots all in one transaction: all or none.

        Args:
            snapshots: The snapshots.
            wait: Seconds to wait for another process's lock this time (default: the store's
                timeout); `specmon.storage.saving` waits in short attempts, to answer Ctrl-C.

        Returns:
            Their new ids, in order.

        Raises:
            ValueError: A snapshot has no runs (an interrupted bench stores nothing).
            StoreLocked: Another process held the lock for `wait` seconds; nothing was stored.
            StoreError: The write failed; nothing was stored.
        """
        with self._waiting(wait), self._errors(), self._transaction():
            return self._insert(snapshots)

    def save_ab(self, runs: Sequence[AbRun], *, wait: float | None = None) -> builtins.list[int]:
        """Store an A/B's benches all in one transaction, all or none: their snapshots, and
        which A/B, round, side and configuration each was (for `latest_ab`).

        Args:
            runs: The A/B's benches.
            wait: As `save_all`'s.

        Returns:
            The snapshots' new ids, in order.

        Raises:
            ValueError: A bench has no runs.
            StoreLocked: As `save_all`.
            StoreError: The write failed; nothing was stored.
        """
        with self._waiting(wait), self._errors(), self._transaction():
            ids = self._insert([run.snapshot for run in runs])
            self._db.executemany(
                "INSERT INTO ab_benches (snapshot_id, ab, round, side, config)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (i, ids[0], run.round, run.side.value, run.config)
                    for i, run in zip(ids, runs, strict=True)
                ],
            )
        return ids

    def latest_ab(self, fingerprint: str) -> builtins.list[AbRun]:
        """The benches of the newest A/B on a server of this fingerprint (its configuration
        apart from speculation, as `latest_baseline` matches), in the order they ran; none when
        the store holds no such A/B. Unreadable rows are left out and described in `skipped`.

        Raises:
            StoreError: The store could not be read.
        """
        with self._errors():
            rows = self._db.execute(
                "SELECT b.snapshot_id, s.record, b.round, b.side, b.config FROM ab_benches b"
                " JOIN snapshots s ON s.id = b.snapshot_id WHERE b.ab = ("
                "  SELECT MAX(b2.ab) FROM ab_benches b2 JOIN snapshots s2 ON s2.id = b2.ab"
                "  WHERE s2.fingerprint = ?"
                ") ORDER BY b.snapshot_id",
                (fingerprint,),
            ).fetchall()
        self.skipped = []
        return [
            AbRun(round_, Side(side), snapshot, config)
            for row_id, record, round_, side, config in rows
            if (snapshot := self._load_or_skip(row_id, record)) is not None
        ]

    def holds(self, snapshot: Snapshot) -> bool:
        """Whether a snapshot with exactly this record is stored already (an unsaved result
        imported twice is stored once: `specmon.storage.unsaved`).

        Raises:
            StoreError: The store could not be read.
        """
        with self._errors():
            row = self._db.execute(
                "SELECT 1 FROM snapshots WHERE created_at = ? AND url = ? AND record = ?",
                (snapshot.created_at, snapshot.url, _record_text(snapshot)),
            ).fetchone()
        return row is not None

    @contextmanager
    def _waiting(self, seconds: float | None) -> Iterator[None]:
        """Wait `seconds` for a lock inside (SQLite's busy timeout), the store's timeout after."""
        if seconds is None:
            yield
            return
        with self._errors():
            self._db.execute(f"PRAGMA busy_timeout = {max(0, round(seconds * 1000))}")
        before, self._timeout = self._timeout, seconds
        try:
            yield
        finally:
            self._timeout = before
            with suppress(sqlite3.Error):
                self._db.execute(f"PRAGMA busy_timeout = {round(before * 1000)}")

    def _insert(self, snapshots: Sequence[Snapshot]) -> builtins.list[int]:
        """Insert completed snapshots inside the caller's transaction; their ids."""
        if any(not snapshot.runs for snapshot in snapshots):
            raise ValueError("a snapshot needs at least one run to be stored")
        ids: builtins.list[int] = []
        for snapshot in snapshots:
            server = snapshot.server
            record = _record_text(snapshot)
            cursor = self._db.execute(
                "INSERT INTO snapshots (created_at, url, label, backend, model, version,"
                " speculative, fingerprint, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    snapshot.created_at,
                    snapshot.url,
                    snapshot.label,
                    server.backend,
                    server.model,
                    server.version,
                    int(server.speculative is not None),
                    fingerprint(server.args),
                    record,
                ),
            )
            assert cursor.lastrowid is not None  # an INSERT into a rowid table sets it
            ids.append(cursor.lastrowid)
        return ids

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the connection (for `history_store`), committed on exit.

        Raises:
            StoreError: The write failed; nothing was written.
        """
        with self._errors(), self._transaction():
            yield self._db

    def read(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> builtins.list[Any]:
        """The rows of one query (for `history_store`).

        Raises:
            StoreError: The read failed.
        """
        with self._errors():
            return self._db.execute(sql, params).fetchall()

    def get(self, snapshot_id: int) -> Snapshot:
        """The snapshot with this id.

        Raises:
            SnapshotNotFound: No such id.
            BadRecord: The row exists but its record cannot be read back.
        """
        with self._errors():
            row = self._db.execute(
                "SELECT id, record FROM snapshots WHERE id = ?", (snapshot_id,)
            ).fetchone()
        if row is None:
            raise SnapshotNotFound(f"no snapshot {snapshot_id} in {self.path}")
        return self._load(row[0], row[1])

    def list(self, url: str | None = None, limit: int | None = None) -> builtins.list[Snapshot]:
        """Stored snapshots, newest first.

        Rows whose record cannot be read are left out and described in `skipped`, so one bad
        row does not hide the others.

        Args:
            url: Only this target's snapshots.
            limit: At most this many rows are read (skipped ones count).
        """
        sql = "SELECT id, record FROM snapshots"
        params: builtins.list[Any] = []
        if url is not None:
            sql += " WHERE url = ?"
            params.append(url)
        sql += " ORDER BY created_at DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._errors():
            rows = self._db.execute(sql, params).fetchall()
        self.skipped = []
        return [
            s for row_id, record in rows if (s := self._load_or_skip(row_id, record)) is not None
        ]

    def baselines(self) -> builtins.list[Snapshot]:
        """Stored snapshots taken with speculation off, newest first: the candidates of the
        baseline rule (`analysis.baseline_rule`); unreadable rows as `list` skips them."""
        sql = "SELECT id, record FROM snapshots WHERE speculative = 0"
        sql += " ORDER BY created_at DESC, id DESC"
        with self._errors():
            rows = self._db.execute(sql).fetchall()
        self.skipped = []
        return [
            s for row_id, record in rows if (s := self._load_or_skip(row_id, record)) is not None
        ]

    def latest_baseline(
        self, fingerprint: str, protocol: Protocol | None = None, url: str | None = None
    ) -> Snapshot | None:
        """The newest snapshot taken with speculation off on a server of this fingerprint.

        Args:
            fingerprint: `analysis.validity.fingerprint` of the server args to match.
            protocol: When given, only snapshots with the same max tokens, temperature and
                prompt (runs and warm-up do not change what a run measures).
            url: When given, only this target's snapshots; otherwise any target, since a
                baseline server is often another URL than the speculative one.
        """
        sql = "SELECT id, record FROM snapshots WHERE speculative = 0 AND fingerprint = ?"
        params: builtins.list[Any] = [fingerprint]
        if url is not None:
            sql += " AND url = ?"
            params.append(url)
        sql += " ORDER BY created_at DESC, id DESC"
        self.skipped = []
        with self._errors():
            # Iterate lazily: the newest matching row usually ends the search.
            rows = self._db.execute(sql, params)
            for row_id, record in rows:
                snapshot = self._load_or_skip(row_id, record)
                if snapshot is None:
                    continue
                if protocol is None or not protocol_differences(protocol, snapshot.protocol):
                    rows.close()
                    return snapshot
        return None

    def _load(self, row_id: int, record: object) -> Snapshot:
        try:
            if not isinstance(record, str):
                raise RecordError("record column is not text")
            snapshot = snapshot_from_record(json.loads(record))
        except (RecordError, ValueError, RecursionError) as error:
            # json.JSONDecodeError is a ValueError; its message names line and column.
            raise BadRecord(f"snapshot {row_id} in {self.path} is unreadable: {error}") from None
        return replace(snapshot, id=row_id)

    def _load_or_skip(self, row_id: int, record: object) -> Snapshot | None:
        try:
            return self._load(row_id, record)
        except BadRecord as error:
            self.skipped.append(str(error))
            return None

    def _migrate(self) -> None:
        version = self._user_version()
        if version > SCHEMA_VERSION:
            raise self._too_new(version)
        if version == SCHEMA_VERSION:
            return
        with self._transaction():
            # Read again under the write lock: another process may have migrated meanwhile.
            version = self._user_version()
            if version > SCHEMA_VERSION:
                raise self._too_new(version)
            if version == 0 and self._db.execute("SELECT 1 FROM sqlite_master").fetchone():
                raise StoreCorrupt(
                    f"{self.path} is not a specmon store (it holds another program's tables):"
                    " move it away or pass --db"
                )
            for step in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[step]:
                    self._db.execute(statement)
            # PRAGMA takes no parameters; the value is our own integer.
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _user_version(self) -> int:
        row = self._db.execute("PRAGMA user_version").fetchone()
        return int(row[0])

    def _too_new(self, version: int) -> StoreTooNew:
        return StoreTooNew(
            f"{self.path} has schema version {version}, written by a newer specmon (this one"
            f" reads up to {SCHEMA_VERSION}): upgrade specmon or pass --db"
        )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        # IMMEDIATE takes the write lock up front, so waiting for another writer happens here
        # (bounded by the timeout) rather than as a deadlock-prone lock upgrade mid-transaction.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                # The original error is the one worth reporting; a failed rollback still ends
                # the transaction (SQLite rolls back when the connection closes).
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            raise self._translate(error) from None

    def _translate(self, error: sqlite3.Error) -> StoreError:
        """A one-line `StoreError` for a sqlite3 error, by SQLite's result code."""
        name = getattr(error, "sqlite_errorname", None) or ""
        path = self.path
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return StoreLocked(f"{path} is locked by another process (waited {self._timeout:g} s)")
        if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
            return StoreCorrupt(
                f"{path} is not a specmon store (corrupted?): move it away or pass --db"
            )
        if name.startswith("SQLITE_READONLY"):
            return StoreUnavailable(f"{path} is read-only: pass --db with a writable path")
        if name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
            return StoreUnavailable(f"cannot open {path}: pass --db with a writable path")
        if name.startswith("SQLITE_FULL"):
            return StoreUnavailable(f"cannot write {path}: the disk is full")
        if name.startswith("SQLITE_IOERR"):
            return StoreUnavailable(f"cannot read or write {path}: I/O error ({error})")
        return StoreError(f"{path}: {error}")
