"""SQLite persistence for the store: every acknowledged write is committed before it is.

The database and its WAL and shared-memory files hold every Secret: they are created 0600
(SQLite gives the WAL and SHM files the database file's mode) in a directory only the
owner may enter.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from setpoint.cluster.storage.privatefiles import private_directory, private_file

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


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
        self._db.executescript(_SCHEMA)

    def load(self) -> tuple[int, Iterator[tuple[str, str, str, dict[str, Any]]]]:
        row = self._db.execute("SELECT value FROM meta WHERE key='revision'").fetchone()
        revision = int(row[0]) if row else 0
        rows = self._db.execute("SELECT resource, namespace, name, data FROM objects")
        return revision, ((r, ns, n, orjson.loads(d)) for r, ns, n, d in rows)

    def put(self, resource: str, namespace: str, name: str, obj: dict[str, Any] | None,
            revision: int) -> None:
        """Commit one object's new state and the revision, or raise :class:`StorageFailure`
        with the database unchanged."""
        db = self._db
        try:
            db.execute("BEGIN")
            if obj is None:
                db.execute(
                    "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?",
                    (resource, namespace, name),
                )
            else:
                db.execute(
                    "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?)",
                    (resource, namespace, name, orjson.dumps(obj)),
                )
            db.execute("INSERT OR REPLACE INTO meta VALUES ('revision', ?)", (revision,))
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise StorageFailure(str(exc)) from exc
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        # SQLite rolls the transaction back by itself on some errors (SQLITE_FULL, IOERR):
        # a second ROLLBACK would fail with "no transaction is active" and hide the first
        # (and whatever ROLLBACK itself might raise, the first error is the one to report)
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    def close(self) -> None:
        self._db.close()
