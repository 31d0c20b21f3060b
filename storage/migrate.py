"""Schema migrations with Alembic: upgrade at start, once, under a database lock.

The schema is the revisions in `storage/migrations/versions`, not `create_all`: a release
that changes a table ships a revision, and every existing database is brought to it at
start. Replicas that start together take one lock first, so exactly one of them migrates
and the others find the schema already at head:

- PostgreSQL: a transaction-level advisory lock keyed by the current schema, so two apps
  in two schemas of one server never wait for each other. DDL is transactional there, so
  a migration that fails leaves the schema as it was.
- SQLite: an exclusive `flock` on `<database>.migrate.lock` beside the file (an in-memory
  database has one process, hence no lock).

A database made before migrations existed (the previous release called `create_all`) has
every table and no `alembic_version`; it matches the baseline revision exactly, so it is
stamped at the baseline and then upgraded like any other. `python -m storage` runs the
same functions by hand (`upgrade`, `current`, `downgrade`, and `revision` for developers).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, inspect, text

from storage.schema_lock import sqlite_file_lock

__all__ = ["BASELINE", "current", "downgrade", "head", "new_revision", "upgrade"]

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
BASELINE = "0001_baseline"
_LEGACY_MARKER = "conversations"  # a table every release has had


def _config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def head() -> str:
    """The newest revision this code knows."""
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    return script.get_current_head() or BASELINE


def current(engine: Engine) -> str | None:
    """The revision the database is at (None: not under migrations yet, or empty)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database to `revision` (default: head); a no-op when it is there."""
    with _locked(engine) as connection:
        config = _config(connection)
        if _is_unversioned_legacy(connection):
            command.stamp(config, BASELINE)
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the database back to `revision` ("base" drops every table: for operators only)."""
    with _locked(engine) as connection:
        command.downgrade(_config(connection), revision)


def new_revision(message: str) -> Path:
    """Autogenerate the next revision from the models (for developers; review it, then
    commit it). Compared against a scratch SQLite database at head, so no server is needed."""
    with tempfile.TemporaryDirectory() as scratch:
        engine = create_engine(f"sqlite:///{scratch}/head.db")
        upgrade(engine)
        with engine.begin() as connection:
            script = command.revision(_config(connection), message=message, autogenerate=True)
        engine.dispose()
    assert not isinstance(script, list) and script is not None
    return Path(script.path)


def _is_unversioned_legacy(connection: Connection) -> bool:
    tables = set(inspect(connection).get_table_names())
    return _LEGACY_MARKER in tables and "alembic_version" not in tables


@contextlib.contextmanager
def _locked(engine: Engine) -> Iterator[Connection]:
    """One transaction on one connection, holding the migration lock for its length."""
    with sqlite_file_lock(engine), engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text(
                "SELECT pg_advisory_xact_lock(hashtext('superset-agent:migrate:' "
                "|| current_schema()))"))
        yield connection
