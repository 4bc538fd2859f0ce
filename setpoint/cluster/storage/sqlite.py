"""SQLite persistence for the store: every acknowledged write is committed before it is.

Each write is one transaction committed to the write-ahead log (WAL mode, synchronous=NORMAL:
a commit is in the log, which the operating system keeps, when it returns, so a killed
process loses nothing acknowledged). Copying the log into the database (a checkpoint) costs
two fsyncs, which SQLite would otherwise make every ~1,000 pages in the middle of a write,
holding the event loop for as long as the disk takes: a thread of its own does it with a
second connection, as a passive checkpoint that never blocks the writer.

The database and its WAL and shared-memory files hold every Secret: they are created 0600
(SQLite gives the WAL and SHM files the database file's mode) in a directory only the
owner may enter.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from setpoint.cluster.storage.privatefiles import private_directory, private_file

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
"""


# writes between checkpoints: a write adds 2-3 pages to the log, so about SQLite's own
# default of 1,000 pages
CHECKPOINT_EVERY_WRITES = 256
# Under writes that never pause, a passive checkpoint never catches up with the log, which
# then never starts over: past this size the checkpointer restarts it, holding writers for
# as long as that takes.
WAL_RESTART_BYTES = 64 * 1024 * 1024


class StorageFailure(Exception):
    """The database did not commit a write (disk full, I/O error): nothing of it happened."""


class SqliteBackend:
    """Write-through persistence. WAL mode: a process crash loses no committed write."""

    def __init__(self, path: Path) -> None:
        private_directory(path.parent)
        for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
            private_file(path.parent / name, create=name == path.name)
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer's job
        # the log is cut back to this size when it starts over
        self._db.execute(f"PRAGMA journal_size_limit={WAL_RESTART_BYTES}")
        self._db.executescript(_SCHEMA)
        self._checkpointer = Checkpointer(path)
        self._writes = 0

    def load(self) -> tuple[int, Iterator[tuple[str, str, str, bytes]]]:
        """The revision and every object's stored JSON."""
        row = self._db.execute("SELECT value FROM meta WHERE key='revision'").fetchone()
        revision = int(row[0]) if row else 0
        rows = self._db.execute("SELECT resource, namespace, name, data FROM objects")
        return revision, ((r, ns, n, bytes(d)) for r, ns, n, d in rows)

    def put(self, resource: str, namespace: str, name: str, data: bytes | None,
            revision: int) -> None:
        """Commit one object's new state (its JSON; None: deleted) and the revision, or raise
        :class:`StorageFailure` with the database unchanged."""
        db = self._db
        try:
            db.execute("BEGIN")
            if data is None:
                db.execute(
                    "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?",
                    (resource, namespace, name),
                )
            else:
                db.execute(
                    "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?)",
                    (resource, namespace, name, data),
                )
            db.execute("INSERT OR REPLACE INTO meta VALUES ('revision', ?)", (revision,))
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise StorageFailure(str(exc)) from exc
        except BaseException:
            self._rollback()
            raise
        self._writes += 1
        if self._writes % CHECKPOINT_EVERY_WRITES == 0:
            self._checkpointer.wake()

    def _rollback(self) -> None:
        # SQLite rolls the transaction back by itself on some errors (SQLITE_FULL, IOERR):
        # a second ROLLBACK would fail with "no transaction is active" and hide the first
        # (and whatever ROLLBACK itself might raise, the first error is the one to report)
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    def close(self) -> None:
        self._checkpointer.stop()
        self._db.close()


class Checkpointer:
    """Checkpoints the WAL on a thread of its own when woken, with its own connection.

    A passive checkpoint copies what the log holds into the database while the writer goes
    on (SQLite releases the GIL while it works); once it has copied everything, the next
    write starts the log over from its beginning, so the log stays bounded."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._wal = path.parent / f"{path.name}-wal"
        self._wanted = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpointer",
                                        daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wanted.set()

    def _run(self) -> None:
        db = sqlite3.connect(str(self._path), isolation_level=None, check_same_thread=False)
        try:
            while True:
                self._wanted.wait()
                self._wanted.clear()
                if self._stopping:
                    return
                with contextlib.suppress(sqlite3.Error, OSError):  # the next wake retries
                    _, logged, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if logged != copied and os.stat(self._wal).st_size > WAL_RESTART_BYTES:
                        db.execute("PRAGMA wal_checkpoint(RESTART)")
        finally:
            db.close()

    def stop(self) -> None:
        self._stopping = True
        self._wanted.set()
        self._thread.join(timeout=30)
