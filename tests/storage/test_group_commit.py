"""`storage.group_commit`: writes that wait while another commits are committed together,
and each caller sees what its write alone would have given it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlmodel import Session

from storage import Database
from storage.retry import DatabaseUnavailable


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'group.db'}")
    with database.session() as session:
        session.execute(text("CREATE TABLE t (k TEXT PRIMARY KEY)"))
    return database


def _keys(db: Database) -> list[str]:
    with db.read() as session:
        return [row[0] for row in session.execute(text("SELECT k FROM t ORDER BY k"))]


def _insert(key: str) -> Any:
    return lambda session: session.execute(text("INSERT INTO t (k) VALUES (:k)"), {"k": key})


def _commits(db: Database) -> list[int]:
    counted: list[int] = []
    event.listen(db.engine, "commit", lambda _conn: counted.append(1))
    return counted


class _Held:
    """The first write's statements wait until released, so the others queue behind it."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self, session: Session) -> None:
        _insert("first")(session)
        self.started.set()
        assert self.release.wait(30)


async def _behind_a_held_write(db: Database, writes: list[Any]) -> list[Any]:
    """Run `writes` while a first write is committing; their outcomes, in order."""
    held = _Held()
    first = asyncio.ensure_future(db.commit_together(held))
    assert await asyncio.to_thread(held.started.wait, 30)
    rest = [asyncio.ensure_future(db.commit_together(write)) for write in writes]
    await asyncio.sleep(0)  # every one queued (run() queues before its first await)
    held.release.set()
    outcomes = await asyncio.gather(first, *rest, return_exceptions=True)
    return outcomes[1:]


async def test_writes_waiting_behind_a_commit_are_committed_in_one_transaction(
        db: Database) -> None:
    commits = _commits(db)
    outcomes = await _behind_a_held_write(db, [_insert(f"k{n:02}") for n in range(20)])
    assert outcomes == [None] * 20
    assert _keys(db) == ["first"] + [f"k{n:02}" for n in range(20)]
    # The held write alone, then the twenty together (one by one before: 21 commits).
    assert len(commits) == 2 and db.group.transactions == 2


async def test_a_batch_is_at_most_max_batch_writes(db: Database) -> None:
    db.group.max_batch = 8
    commits = _commits(db)
    outcomes = await _behind_a_held_write(db, [_insert(f"k{n:02}") for n in range(20)])
    assert outcomes == [None] * 20 and len(_keys(db)) == 21
    assert len(commits) == 1 + 3  # 8 + 8 + 4


async def test_a_failing_write_fails_alone_and_the_others_land(db: Database) -> None:
    outcomes = await _behind_a_held_write(db, [_insert("a"), _insert("first"), _insert("b")])
    assert outcomes[0] is None and outcomes[2] is None
    assert "UNIQUE" in str(outcomes[1])  # the duplicate key, as its write alone raises it
    assert _keys(db) == ["a", "b", "first"]


async def test_an_unavailable_database_fails_every_write_of_the_batch_without_a_retry(
        db: Database) -> None:
    tried: list[str] = []

    def gone(_session: Session) -> None:
        tried.append("gone")
        raise DatabaseUnavailable()

    def counted(key: str) -> Any:
        def write(session: Session) -> None:
            tried.append(key)
            _insert(key)(session)
        return write

    outcomes = await _behind_a_held_write(db, [counted("a"), gone, counted("b")])
    # A commit that failed so may have landed: nobody's write is tried again here.
    assert all(isinstance(outcome, DatabaseUnavailable) for outcome in outcomes)
    assert tried == ["a", "gone"] and _keys(db) == ["first"]


async def test_then_runs_after_the_commit_even_when_the_caller_was_cancelled(
        db: Database) -> None:
    held, after = _Held(), []
    first = asyncio.ensure_future(db.commit_together(held, then=lambda: after.append("first")))
    assert await asyncio.to_thread(held.started.wait, 30)
    second = asyncio.ensure_future(db.commit_together(
        _insert("second"), then=lambda: after.append("second")))
    await asyncio.sleep(0)
    second.cancel()
    await asyncio.sleep(0)
    assert not second.done()  # it waits for its write to end
    held.release.set()
    with pytest.raises(asyncio.CancelledError):
        await second
    await first
    assert after == ["first", "second"] and _keys(db) == ["first", "second"]


async def test_then_does_not_run_for_a_write_that_failed(db: Database) -> None:
    after: list[str] = []
    with pytest.raises(Exception, match="UNIQUE"):
        await db.commit_together(_insert("x"), then=lambda: after.append("x"))
        await db.commit_together(_insert("x"), then=lambda: after.append("again"))
    assert after == ["x"]


async def test_a_write_alone_is_one_transaction_in_a_worker_thread(db: Database) -> None:
    loop_thread, seen = threading.get_ident(), []
    commits = _commits(db)
    await db.commit_together(lambda session: (seen.append(threading.get_ident()),
                                              _insert("alone")(session)))
    assert seen and seen[0] != loop_thread and len(commits) == 1
    await db.commit_together(_insert("later"))  # the committing thread was let go
    assert _keys(db) == ["alone", "later"]


async def test_a_then_that_fails_fails_its_own_caller_only(db: Database) -> None:
    held, after = _Held(), []

    def broken() -> None:
        raise RuntimeError("then failed")

    first = asyncio.ensure_future(db.commit_together(held))
    assert await asyncio.to_thread(held.started.wait, 30)
    writes = [asyncio.ensure_future(db.commit_together(_insert("a"), then=broken)),
              asyncio.ensure_future(db.commit_together(_insert("b"),
                                                       then=lambda: after.append("b")))]
    await asyncio.sleep(0)
    held.release.set()
    await first
    outcomes = await asyncio.gather(*writes, return_exceptions=True)
    assert isinstance(outcomes[0], RuntimeError) and outcomes[1] is None
    assert after == ["b"] and _keys(db) == ["a", "b", "first"]
