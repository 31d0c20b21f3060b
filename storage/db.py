"""Engine factory and session scope for SQLite (WAL, busy timeout) and PostgreSQL (psycopg 3).

`Database` is the one place sessions are opened, so it is also the one place database
outages are handled (`storage.retry`): taking a session's connection is retried for the
policy's budget, a transient error anywhere in a session becomes `DatabaseUnavailable`, and
`run`/`arun` retry whole units of work that are safe to repeat.

A transaction that only read ends with a rollback, not a commit (the connection notes each
statement that is not a SELECT); `read` goes further for the hot read paths of a run: no
transaction at all on PostgreSQL (autocommit), so no BEGIN and no COMMIT round trips.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, create_engine

from storage.group_commit import GroupCommit
from storage.migrations import HEAD
from storage.retry import DEFAULT_POLICY, DatabaseUnavailable, RetryPolicy, is_transient
from storage.schema_lock import sqlite_file_lock
from storage.write_gate import WriteGate, before_write

__all__ = ["Database", "make_engine", "off_loop", "use_worker_threads"]

SQLITE_BUSY_TIMEOUT_MS = 10_000
CONNECT_TIMEOUT_S = 5  # PostgreSQL: a host that drops packets fails in seconds, not minutes
POSTGRES_POOL_SIZE, POSTGRES_MAX_OVERFLOW = 10, 20
# Threads for `off_loop` and every `asyncio.to_thread` of the server: as many as PostgreSQL
# connections can serve at once (`use_worker_threads`).
WORKER_THREADS = POSTGRES_POOL_SIZE + POSTGRES_MAX_OVERFLOW

_log = logging.getLogger(__name__)
T = TypeVar("T")


async def off_loop(work: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`work(*args, **kwargs)` (synchronous database work) in a worker thread, so the event
    loop, and with it Gradio and every other stream of the process, never waits on the
    database. A cancellation that arrives meanwhile waits for the work to end and is then
    raised: what a run wrote is never still landing after the run recorded its end."""
    job = asyncio.ensure_future(asyncio.to_thread(work, *args, **kwargs))
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await job  # its outcome is not wanted; only that it has ended
        raise


def use_worker_threads(threads: int = WORKER_THREADS) -> ThreadPoolExecutor:
    """Give the running event loop's default executor `threads` threads (the server's
    lifespan calls this as it starts).

    Why: asyncio's default is min(32, cores + 4), six threads on this 2-core machine, and
    the server's database calls mostly wait (on PostgreSQL's replies, on SQLite's write
    lock, for the GIL) while holding one. Traced with ten runs streaming at once (one-tool
    turns, SQLite, offline model at 20 ms a token): a step's write and read of the next
    prompt waited 45 ms (median) for a free thread behind other runs' admissions and
    snapshot saves, each of 2-9 ms of CPU; with 32 threads in the trace (30 here), ~1 ms.
    bench/concurrency.py, side by side in one session (event gap p99 beyond the model,
    ratio to the bare Gradio endpoint, 3 rounds): 10 streams 4.65 -> 2.23, 50 streams
    10.9 -> 5.3, 100 streams 8.7 -> 5.3; all finished as before. A process lock around
    whole write sessions was tried then and made the waits longer (its holder waits for the
    GIL with the lock held); `storage.write_gate`, taken at a session's first write and
    given back at its commit, is what came of it later."""
    executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="off-loop")
    asyncio.get_running_loop().set_default_executor(executor)
    return executor


_WROTE = "superset_agent.wrote"  # Connection.info key: this transaction ran a non-SELECT


def _note_writes(engine: Engine) -> None:
    """Mark a connection whose transaction ran anything but a SELECT, so a session that only
    read can end without a commit, and let a gated session take SQLite's writers' turn
    before its first write (`storage.write_gate`). Conservative: whatever is not plainly a
    SELECT counts."""

    @event.listens_for(engine, "before_cursor_execute")
    def _noted(conn, _cursor, statement, _params, _context, _many) -> None:  # type: ignore[no-untyped-def]
        if statement.lstrip()[:6].upper() != "SELECT":
            conn.info[_WROTE] = True
            before_write(conn.info)


def make_engine(url: str, *, connect_timeout_s: int = CONNECT_TIMEOUT_S) -> Engine:
    """Build an engine for `sqlite:///...` or `postgresql+psycopg://...` with sane defaults."""
    engine = _make_engine(url, connect_timeout_s)
    _note_writes(engine)
    return engine


def _make_engine(url: str, connect_timeout_s: int) -> Engine:
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
        # A connect_timeout in the URL wins; without one psycopg would wait for the OS.
        connect_args = ({} if "connect_timeout" in parsed.query
                        else {"connect_timeout": connect_timeout_s})
        return create_engine(url, pool_pre_ping=True, pool_size=POSTGRES_POOL_SIZE,
                             max_overflow=POSTGRES_MAX_OVERFLOW, connect_args=connect_args)
    raise ValueError(f"Unsupported DATABASE_URL backend: {parsed.get_backend_name()!r}")


class Database:
    """Owns the engine; the one place sessions are opened."""

    def __init__(self, url: str, *, retry: RetryPolicy = DEFAULT_POLICY,
                 connect_timeout_s: int = CONNECT_TIMEOUT_S) -> None:
        self.url = url
        self.retry = retry
        self.engine = make_engine(url, connect_timeout_s=connect_timeout_s)
        # Reads that need no transaction: PostgreSQL in autocommit (no BEGIN, no COMMIT);
        # SQLite's driver opens no transaction for a SELECT in the first place.
        self._reader = (self.engine.execution_options(isolation_level="AUTOCOMMIT")
                        if self.dialect == "postgresql" else self.engine)
        self._away_since: float | None = None  # monotonic time the last outage began
        # SQLite: the process's writers take turns without its busy handler's sleeps.
        self._gate = (WriteGate(SQLITE_BUSY_TIMEOUT_MS / 1000)
                      if self.dialect == "sqlite" else None)
        self.group = GroupCommit(self)  # `commit_together`

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def create_schema(self) -> None:
        """Bring the schema to the newest migration (`storage.migrate`), once across replicas.
        A database already at head is one SELECT; Alembic is imported only to migrate."""
        try:
            with sqlite_file_lock(self.engine):  # not while another start creates the file
                if self._schema_revision() == HEAD:
                    return
            from storage import migrate

            migrate.upgrade(self.engine)
        except SQLAlchemyError as exc:
            if is_transient(exc):
                raise DatabaseUnavailable() from exc
            raise

    def _schema_revision(self) -> str | None:
        with self.engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return None
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()

    @contextmanager
    def session(self, connect_budget_s: float | None = None) -> Iterator[Session]:
        """A session that commits on success and rolls back on error.

        Its connection is taken before the body runs, retrying transient errors for the
        policy's budget or `connect_budget_s` (a pooled connection the server dropped is
        replaced by the pool's ping). A transient error inside the body or at commit is not
        retried here, since a `with` body cannot run twice, but becomes
        `DatabaseUnavailable`; use `run` for work that may be repeated.
        """
        with self._session(self.retry.budget(connect_budget_s)) as session:
            yield session

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading only: no transaction on PostgreSQL (each statement sees
        what is committed when it runs), never a commit. Outages as in `session`. Writing
        in it is a bug: on PostgreSQL each statement would commit on its own."""
        with self._session(self.retry.budget(), readonly=True) as session:
            yield session

    def run(self, work: Callable[[Session], T], *, budget_s: float | None = None) -> T:
        """`work(session)` in its own transaction, the whole unit retried on transient
        errors for `budget_s` (default: the policy's). Only for work that is safe to repeat:
        a commit that failed may or may not have landed."""
        for attempt in self.retry.retrying(self.retry.budget(budget_s)):
            with attempt:
                return self._once(work)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def arun(self, work: Callable[[Session], T], *, budget_s: float) -> T:
        """`run` for coroutines: each attempt in a worker thread, the waits between them
        asyncio sleeps, so a long budget neither blocks the event loop nor holds a thread,
        and cancelling the caller stops the retries at once."""
        async for attempt in self.retry.async_retrying(budget_s):
            with attempt:
                return await asyncio.to_thread(self._once, work)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def commit_together(self, work: Callable[[Session], Any],
                              then: Callable[[], Any] | None = None) -> None:
        """`work(session)` committed in a worker thread together with the writes waiting
        beside it, then `then()` there; as a write of its own would be, for each caller
        (`storage.group_commit`). Not retried: for work that must not run twice."""
        await self.group.run(work, then)

    def ping(self) -> None:
        """One `SELECT 1`, without retries (health checks want the state now);
        `DatabaseUnavailable` when the database cannot answer."""
        with self._session(0.0) as session:
            session.execute(text("SELECT 1"))

    def dispose(self) -> None:
        self.engine.dispose()

    # internals ---------------------------------------------------------------------------

    def _once(self, work: Callable[[Session], T]) -> T:
        with self._session(0.0) as session:
            return work(session)

    @contextmanager
    def _session(self, connect_budget_s: float, *, readonly: bool = False
                 ) -> Iterator[Session]:
        session = Session(self._reader if readonly else self.engine, expire_on_commit=False)
        gate = None if readonly else self._gate  # SQLite's writers' turn (storage.write_gate)
        info: dict[Any, Any] = {}  # the connection's, once checked out
        try:
            self._connect(session, connect_budget_s)
            info = session.connection().info
            info.pop(_WROTE, None)
            if gate is not None:
                gate.enter(info)
            yield session
            if not readonly:
                session.flush()
                if session.connection().info.pop(_WROTE, False):
                    session.commit()
                # else: nothing to commit; `close` below ends the transaction (rollback)
                if gate is not None:
                    gate.leave(info)  # committed: the next writer's turn, at once
        except BaseException as exc:
            with contextlib.suppress(SQLAlchemyError):  # the connection may be gone already
                session.rollback()
            if isinstance(exc, SQLAlchemyError) and is_transient(exc):
                self._went_away(exc)
                raise DatabaseUnavailable() from exc
            raise
        finally:
            with contextlib.suppress(SQLAlchemyError):
                session.close()
            if gate is not None:  # after a rollback (a no-op when given back above)
                gate.leave(info)

    def _connect(self, session: Session, budget_s: float) -> None:
        """Check out the session's connection now, retrying a refused or dropped one.

        The first try runs without tenacity: setting up its retry loop for every session
        was ~3 % of the server's CPU at 10 concurrent streams, and it is needed only once
        a try has failed with a transient error."""
        started = time.monotonic()
        try:
            self._checkout(session)
        except SQLAlchemyError as exc:
            left = budget_s - (time.monotonic() - started)  # the budget counts the first try
            if not is_transient(exc) or left <= 0:
                raise
            for attempt in self.retry.retrying(left):
                with attempt:
                    self._checkout(session)
        if self._away_since is not None:
            _log.warning("database available again after %.1f s",
                         time.monotonic() - self._away_since)
            self._away_since = None

    @staticmethod
    def _checkout(session: Session) -> None:
        try:
            session.connection()
        except SQLAlchemyError:
            with contextlib.suppress(SQLAlchemyError):
                session.rollback()  # so the next attempt starts a fresh transaction
            raise

    def _went_away(self, exc: BaseException) -> None:
        """Log an outage once when it starts, not once per failed call."""
        if self._away_since is None:
            self._away_since = time.monotonic()
            _log.warning("database unavailable: %s", _first_line(exc))


def _first_line(exc: BaseException) -> str:
    """The driver's message on one line, for the log (it may name host and port)."""
    orig = getattr(exc, "orig", None) or exc
    return " ".join(str(orig).split())[:300] or type(orig).__name__
