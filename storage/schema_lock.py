"""The start-up lock of a SQLite database file: `<database>.migrate.lock`, held with `flock`.

Replicas (or tests) starting together on one fresh SQLite file must not connect at the same
time as one of them creates the schema: the first connection switches the file to WAL, and
that switch or a reader racing the DDL can fail with "database is locked" before the busy
timeout helps. So the schema check and the migration both run under this lock. No import
of Alembic here: the check on an up-to-date database stays cheap.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Engine

__all__ = ["sqlite_file_lock"]


@contextlib.contextmanager
def sqlite_file_lock(engine: Engine) -> Iterator[None]:
    """Exclusive for the block on a SQLite file; nothing for PostgreSQL or `:memory:`.
    Not re-entrant: a second hold in the same process would wait for itself."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        yield
        return
    with open(Path(f"{database}.migrate.lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
