"""Engine factory and session scope for SQLite (WAL, busy timeout) and PostgreSQL (psycopg 3)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url
from sqlmodel import Session, SQLModel, create_engine

__all__ = ["Database", "make_engine"]

SQLITE_BUSY_TIMEOUT_MS = 10_000


def make_engine(url: str) -> Engine:
    """Build an engine for `sqlite:///...` or `postgresql+psycopg://...` with sane defaults."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    if parsed.get_backend_name() == "postgresql":
        if parsed.drivername in ("postgresql", "postgres"):
            url = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    raise ValueError(f"Unsupported DATABASE_URL backend: {parsed.get_backend_name()!r}")


class Database:
    """Owns the engine; the one place sessions are opened."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def create_schema(self) -> None:
        SQLModel.metadata.create_all(self.engine)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on error."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def dispose(self) -> None:
        self.engine.dispose()
