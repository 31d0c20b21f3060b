"""SQLite writers of one process take turns at the write gate (storage/write_gate.py)
instead of sleeping in SQLite's busy handler while the lock may already be free.

Each test's SQLite connections get `busy_timeout=0`: a write that meets SQLite's lock held
by another connection then fails at once ("database is locked") instead of sleeping, so a
test can tell a writer that waited at the gate from one that met SQLite's lock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import event, text

from storage import Database
from storage import conversations as repo

WAIT_S = 60  # upper bounds for events that come at once on a quiet machine


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/gate.db")
    database.create_schema()

    @event.listens_for(database.engine, "connect")
    def _no_busy_wait(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        dbapi_connection.execute("PRAGMA busy_timeout=0")  # after the app's own pragmas

    database.engine.dispose()  # connections made from here on have it
    yield database
    database.dispose()


def _until(condition: Callable[[], bool]) -> None:
    """Poll `condition` until it holds (or WAIT_S have passed: the asserts then tell)."""
    deadline = time.monotonic() + WAIT_S
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)


def _create(db: Database, conv_id: str) -> None:
    with db.session() as session:
        repo.create_conversation(session=session, owner_id="u", conversation_id=conv_id)


class _Holder(threading.Thread):
    """Writes in a session of its own, then keeps it open (and the write lock with it)
    until told to commit."""

    def __init__(self, db: Database, conv_id: str) -> None:
        super().__init__(daemon=True)
        self.db, self.conv_id = db, conv_id
        self.wrote, self.commit = threading.Event(), threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.db.session() as session:
                repo.create_conversation(session=session, owner_id="u",
                                         conversation_id=self.conv_id)
                session.flush()  # the INSERT runs now: this connection holds the lock
                self.wrote.set()
                assert self.commit.wait(WAIT_S)
        except BaseException as exc:
            self.error = exc
            self.wrote.set()


class _Writer(threading.Thread):
    def __init__(self, write: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self.write, self.error = write, None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.write()
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.done.set()


def test_a_second_writer_waits_for_the_first_to_commit_instead_of_meeting_sqlites_lock(
        db: Database) -> None:
    """Before the gate, the second write met SQLite's lock (with the app's 10 s busy
    timeout it slept 1, 2, 5 ... 100 ms between tries; with none, it failed at once)."""
    holder = _Holder(db, "first")
    holder.start()
    assert holder.wrote.wait(WAIT_S) and holder.error is None
    second = _Writer(lambda: _create(db, "second"))
    second.start()
    gate = getattr(db, "_gate", None)
    _until(lambda: second.done.is_set() or (gate is not None and gate.waited >= 1))
    holder.commit.set()
    holder.join(WAIT_S)
    assert second.done.wait(WAIT_S)
    assert second.error is None, f"the second writer met SQLite's lock: {second.error!r}"
    assert holder.error is None
    with db.read() as session:
        found = session.execute(text("SELECT id FROM conversations ORDER BY id")).scalars()
        assert list(found) == ["first", "second"]


def test_a_session_that_only_reads_does_not_wait_for_a_writer(db: Database) -> None:
    """WAL lets readers in beside the one writer; the gate is taken at the first write."""
    _create(db, "before")
    holder = _Holder(db, "held")
    holder.start()
    assert holder.wrote.wait(WAIT_S)
    try:
        with db.session() as session:  # a write session that happens only to read
            assert repo.get_conversation(session=session, conversation_id="before")
        with db.read() as session:
            assert repo.get_conversation(session=session, conversation_id="before")
        assert db._gate is not None and db._gate.waited == 0
    finally:
        holder.commit.set()
        holder.join(WAIT_S)


def test_a_writer_that_failed_gives_the_gate_back(db: Database) -> None:
    """A write session that raises after writing rolls back and hands the gate on: the
    next writer does not wait at all."""
    with pytest.raises(RuntimeError), db.session() as session:
        repo.create_conversation(session=session, owner_id="u", conversation_id="lost")
        session.flush()
        raise RuntimeError("the work failed after writing")
    _create(db, "next")
    assert db._gate is not None and db._gate.waited == 0
    with db.read() as session:
        assert repo.get_conversation(session=session, conversation_id="lost") is None
        assert repo.get_conversation(session=session, conversation_id="next") is not None


def test_a_writer_that_waited_out_the_gate_goes_on_and_does_not_wait_again(
        db: Database) -> None:
    """A gate that is never given back (a stuck holder) costs each session one wait of
    the timeout, after which its writes go on to SQLite's own lock, not one per statement."""
    gate = db._gate
    assert gate is not None
    gate.timeout_s = 0.05
    assert gate._lock.acquire(blocking=False)  # held elsewhere and never given back
    try:
        with db.session() as session:
            for conv_id in ("one", "two", "three"):
                repo.create_conversation(session=session, owner_id="u",
                                         conversation_id=conv_id)
                session.flush()  # one INSERT statement each
        assert gate.waited == 1
    finally:
        gate._lock.release()
    with db.read() as session:
        assert repo.get_conversation(session=session, conversation_id="three") is not None


def test_postgresql_writers_pass_no_gate(postgres_schema_url: str) -> None:
    """PostgreSQL takes writers at once; the gate is SQLite's alone."""
    database = Database(postgres_schema_url)
    try:
        assert database._gate is None
    finally:
        database.dispose()
