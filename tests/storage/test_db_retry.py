"""The database's retry policy against real failures: a PostgreSQL of the test's own that is
down or comes back, a backend killed mid-transaction, a serialization failure raised by the
server, and a real SQLite lock. Nothing is faked: the errors come from the drivers."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlmodel import Session

from storage.db import Database
from storage.retry import DatabaseUnavailable, RetryPolicy, is_transient
from tests.private_postgres import PrivatePostgres, private_postgres

UNAVAILABLE = "The database is unavailable; try again shortly."
PATIENT = RetryPolicy(budget_s=30.0)  # long enough for a server start on a loaded machine


@pytest.fixture(scope="module")
def pg() -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        yield server


@pytest.fixture
def stopped(pg: PrivatePostgres) -> Iterator[PrivatePostgres]:
    """The private server, stopped; started again afterwards whatever the test did."""
    pg.stop()
    try:
        yield pg
    finally:
        with contextlib.suppress(RuntimeError):  # the test may have started it already
            pg.start()


def _start_later(pg: PrivatePostgres, delay_s: float) -> threading.Thread:
    def start() -> None:
        time.sleep(delay_s)  # the outage's length, not a wait for a result
        pg.start()

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    return thread


def _select_one(db: Database) -> int:
    with db.session() as session:
        return int(session.execute(text("SELECT 1")).scalar_one())


def test_a_session_waits_for_a_database_that_comes_back(stopped: PrivatePostgres) -> None:
    db = Database(stopped.url, retry=PATIENT)
    try:
        starter = _start_later(stopped, 0.5)
        assert _select_one(db) == 1  # refused at first, then connected
        starter.join()
    finally:
        db.dispose()


def test_an_outage_longer_than_the_budget_is_one_safe_error(stopped: PrivatePostgres) -> None:
    db = Database(stopped.url, retry=RetryPolicy(budget_s=0.5))
    try:
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable) as caught:
            _select_one(db)
        assert time.monotonic() - began >= 0.3  # it did retry before giving up
        assert str(caught.value) == UNAVAILABLE  # no driver text, host or port
        assert str(stopped.port) not in str(caught.value)
        assert isinstance(caught.value.__cause__, OperationalError)  # kept for the log
        with pytest.raises(DatabaseUnavailable):
            db.ping()
    finally:
        db.dispose()


def test_on_the_event_loop_the_retry_is_short(stopped: PrivatePostgres) -> None:
    """The same call that waits out a 1 s outage in a thread gives up at once on the
    event loop's own thread, where every sleep would stall all other requests."""
    db = Database(stopped.url, retry=PATIENT)

    async def on_the_loop() -> int:
        return _select_one(db)

    try:
        starter = _start_later(stopped, 1.0)
        with pytest.raises(DatabaseUnavailable):
            asyncio.run(on_the_loop())
        assert asyncio.run(asyncio.to_thread(_select_one, db)) == 1  # off the loop: waits
        starter.join()
    finally:
        db.dispose()


def test_run_repeats_a_unit_whose_connection_was_killed(pg: PrivatePostgres) -> None:
    db = Database(pg.url)
    calls: list[int] = []

    def work(session: Session) -> int:
        calls.append(1)
        if len(calls) == 1:  # the server ends this backend, as a restart or failover does
            session.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
        return int(session.execute(text("SELECT 41 + 1")).scalar_one())

    try:
        assert db.run(work) == 42 and len(calls) == 2
    finally:
        db.dispose()


def test_run_repeats_a_serialization_failure_but_not_a_bug(pg: PrivatePostgres) -> None:
    db = Database(pg.url)
    calls: list[str] = []

    def conflicted(session: Session) -> str:
        calls.append("conflicted")
        if len(calls) == 1:
            session.execute(text("DO $$ BEGIN RAISE EXCEPTION 'concurrent update' "
                                 "USING ERRCODE = 'serialization_failure'; END $$"))
        return "done"

    def broken(session: Session) -> None:
        calls.append("broken")
        session.execute(text("SELECT FROM no_such_table"))

    try:
        assert db.run(conflicted) == "done" and calls == ["conflicted", "conflicted"]
        with pytest.raises(ProgrammingError):
            db.run(broken)
        assert calls.count("broken") == 1  # never retried, never disguised as an outage
    finally:
        db.dispose()


def test_an_integrity_error_passes_through_unchanged(database_url: str) -> None:
    db = Database(database_url)
    try:
        with db.session() as session:
            session.execute(text("CREATE TABLE once (id INTEGER PRIMARY KEY)"))
            session.execute(text("INSERT INTO once VALUES (1)"))
        with pytest.raises(IntegrityError), db.session() as session:
            session.execute(text("INSERT INTO once VALUES (1)"))
    finally:
        db.dispose()


def test_sqlite_database_is_locked_is_transient(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    impatient = create_engine(f"sqlite:///{path}", connect_args={"timeout": 0})
    try:
        with pytest.raises(OperationalError) as locked, impatient.begin() as connection:
            connection.execute(text("INSERT INTO t VALUES (1)"))
        assert "locked" in str(locked.value) and is_transient(locked.value)
        holder.execute("ROLLBACK")
        with pytest.raises(OperationalError) as missing, impatient.connect() as connection:
            connection.execute(text("SELECT * FROM no_such_table"))
        assert not is_transient(missing.value)  # also an OperationalError in sqlite3
    finally:
        holder.close()
        impatient.dispose()


loops: list[float] = []  # the budgets of the retry loops `_CountedPolicy` set up


class _CountedPolicy(RetryPolicy):
    """A policy that counts the retry loops sessions set up."""

    def retrying(self, budget_s: float):  # type: ignore[no-untyped-def]
        loops.append(budget_s)
        return super().retrying(budget_s)


def test_a_session_on_a_healthy_database_sets_up_no_retry_loop(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Tenacity's loop is set up only after a first try failed (setting it up for every
    session was ~3 % of the server's CPU at 10 concurrent streams); the outage tests above
    show the retries still come."""
    loops.clear()
    db = Database(f"sqlite:///{tmp_path}/healthy.db", retry=_CountedPolicy())
    try:
        assert [_select_one(db) for _ in range(5)] == [1] * 5
        with db.read() as session:
            session.execute(text("SELECT 1"))
    finally:
        db.engine.dispose()
    assert loops == []


async def test_writes_committed_together_wait_out_one_budget_in_an_outage_not_one_per_batch(
        stopped: PrivatePostgres) -> None:
    """`storage.group_commit`: writes queued behind a batch whose connection failed have
    waited with it, and their budget counts from their arrival, so each later batch tries
    only for what is left of it (before: a whole budget of tries each, 4 batches waiting
    4 budgets in turn)."""
    db = Database(stopped.url, retry=RetryPolicy(budget_s=0.5))
    db.group.max_batch = 1
    tries: list[int] = []
    event.listen(db.engine, "do_connect", lambda *_: tries.append(db.group.transactions))
    try:
        outcomes = await asyncio.gather(*(
            db.commit_together(lambda session: session.execute(text("SELECT 1")))
            for _ in range(4)), return_exceptions=True)
        assert all(isinstance(outcome, DatabaseUnavailable) for outcome in outcomes)
        per_batch = [tries.count(batch) for batch in (1, 2, 3, 4)]
        assert per_batch[0] > 1 and all(n < per_batch[0] for n in per_batch[1:]), per_batch
    finally:
        db.dispose()
