"""SQLite JSON-document store behind the demo Superset: one row per object, per environment.

Deliberately not SQLModel: the app's own tables live on `SQLModel.metadata`, and the demo
keeps its own file so that resetting or deleting it never touches the app's data. Documents
are small (a few hundred per environment), so reading a whole kind per request is cheap and
keeps the query logic (Rison filters, ordering) in plain Python, shared by every resource.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "DocumentStore"]

KINDS = ("database", "dataset", "chart", "dashboard")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    env TEXT NOT NULL, kind TEXT NOT NULL, id INTEGER NOT NULL, uuid TEXT NOT NULL,
    doc TEXT NOT NULL, PRIMARY KEY (env, kind, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS objects_uuid ON objects (env, kind, uuid);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class DocumentStore:
    """Thread-safe access to the demo documents; every call is its own short transaction."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # meta --------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # documents ---------------------------------------------------------------------------

    def all(self, env: str, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT doc FROM objects WHERE env = ? AND kind = ? ORDER BY id", (env, kind)
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def get(self, env: str, kind: str, obj_id: int) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT doc FROM objects WHERE env = ? AND kind = ? AND id = ?",
                (env, kind, obj_id),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def by_uuid(self, env: str, kind: str, uuid: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT doc FROM objects WHERE env = ? AND kind = ? AND uuid = ?",
                (env, kind, uuid),
            ).fetchone()
        return json.loads(row[0]) if row else None

    def next_id(self, env: str, kind: str) -> int:
        """Ids are never reused, like autoincrement keys in Superset's metadata database."""
        key = f"next_id:{env}:{kind}"
        with self._lock:
            stored = self.get_meta(key)
            row = self._conn.execute(
                "SELECT COALESCE(MAX(id), 0) FROM objects WHERE env = ? AND kind = ?",
                (env, kind),
            ).fetchone()
            value = max(int(stored or 1), int(row[0]) + 1)
            self.set_meta(key, str(value + 1))
        return value

    def put(self, env: str, kind: str, doc: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._conn.execute(
                "INSERT INTO objects (env, kind, id, uuid, doc) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(env, kind, id) DO UPDATE SET uuid = excluded.uuid, doc = excluded.doc",
                (env, kind, int(doc["id"]), str(doc["uuid"]), json.dumps(doc)),
            )
        return doc

    def put_many(self, env: str, kind: str, docs: list[dict[str, Any]]) -> None:
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                for doc in docs:
                    self.put(env, kind, doc)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def delete(self, env: str, kind: str, obj_id: int) -> bool:
        with self._lock:
            cur = self._conn.execute(
                "DELETE FROM objects WHERE env = ? AND kind = ? AND id = ?", (env, kind, obj_id)
            )
        return cur.rowcount > 0

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM objects").fetchone()[0])

    def wipe(self) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM objects")
            self._conn.execute("DELETE FROM meta WHERE key LIKE 'next_id:%'")
