"""SQLite persistence for the store: every acknowledged write is committed before it is."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

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


class SqliteBackend:
    """Write-through persistence. WAL mode: a process crash loses no committed write."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
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
        db = self._db
        db.execute("BEGIN")
        try:
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
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._db.close()
