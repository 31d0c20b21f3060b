"""Database work of one turn (issue 16 item 6): counted with engine events, not timed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session as OrmSession

from agent.settings import Settings
from storage import conversations as repo
from tests.agent.guardrails_support import call, scripted_runtime, turn
from tests.fakes.openai_server import ScriptedOpenAIServer

_WRITES = ("INSERT", "UPDATE", "DELETE")


@dataclass
class Tally:
    """Transactions of an engine: which statements each ran, and how each ended."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    open: dict[int, list[str]] = field(default_factory=dict)
    ended: list[tuple[str, list[str]]] = field(default_factory=list)  # (commit|rollback, sql)

    @property
    def commits(self) -> list[list[str]]:
        return [sql for how, sql in self.ended if how == "commit"]

    @property
    def writes(self) -> list[list[str]]:
        return [sql for _how, sql in self.ended if any(s.startswith(_WRITES) for s in sql)]

    @property
    def empty_commits(self) -> list[list[str]]:
        return [sql for sql in self.commits if not any(s.startswith(_WRITES) for s in sql)]


@contextmanager
def tally(engine: Any) -> Iterator[Tally]:
    counts = Tally()

    def executed(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        with counts.lock:
            counts.open.setdefault(id(conn), []).append(" ".join(statement.split())[:90])

    def ended(how: str) -> Any:
        def listener(conn: Any) -> None:
            with counts.lock:
                counts.ended.append((how, counts.open.pop(id(conn), [])))
        return listener

    on_commit, on_rollback = ended("commit"), ended("rollback")
    event.listen(engine, "before_cursor_execute", executed)
    event.listen(engine, "commit", on_commit)
    event.listen(engine, "rollback", on_rollback)
    try:
        yield counts
    finally:
        event.remove(engine, "before_cursor_execute", executed)
        event.remove(engine, "commit", on_commit)
        event.remove(engine, "rollback", on_rollback)


def _is_snapshot_save(statements: list[str]) -> bool:
    return any("side_question_sessions" in statement for statement in statements)


async def test_a_one_tool_read_turn_takes_three_write_transactions_and_no_empty_commit(
        settings: Settings, server: ScriptedOpenAIServer) -> None:
    """The run writes its start (lease, run, the person's message), the call with its
    result, and its end (answer, run end, touch, lease release): 3 write transactions
    (the target was at most 4; main wrote 8, and 13 commits). Reads commit nothing. The
    side-question snapshots the run publishes are saved by their own throttled writer, at
    most once per boundary (3 here: two request starts and the end, reply and run end
    coalescing), counted apart because how many of them coalesce depends on timing; each is
    one statement (its row is created only by the parent's first snapshot)."""
    rt = scripted_runtime(settings, server, side_stale_after_s=600.0)  # no heartbeat write
    try:
        server.reply_text("Hello.")
        await turn(rt, "hi")  # the conversation exists; the counted turn is its second
        snapshots = rt.agent.deps.snapshot_listener
        await snapshots.flush("conv-g")
        server.reply_tool_calls(call("list_dashboards"))
        server.reply_text("There are dashboards.")
        with tally(rt.db.engine) as counts:
            events = await turn(rt, "list the dashboards")
            await snapshots.flush("conv-g")  # the run's snapshots are counted too
        assert events[-1]["status"] == "completed"
        assert [e["type"] for e in events].count("tool_result") == 1
        detail = "\n".join(f"{how}: {sql}" for how, sql in counts.ended)
        run_writes = [sql for sql in counts.writes if not _is_snapshot_save(sql)]
        snapshot_saves = [sql for sql in counts.writes if _is_snapshot_save(sql)]
        assert len(run_writes) <= 3, detail
        assert 1 <= len(snapshot_saves) <= 3, detail
        # the run's end writes without loading the run or the conversation first
        end = next(sql for sql in run_writes if any(s.startswith("UPDATE runs") for s in sql))
        assert not [s for s in end if s.startswith("SELECT")], detail
        # the parent's session row exists: a save is its compare-and-set UPDATE alone
        assert all(len(sql) == 1 for sql in snapshot_saves), detail
        assert not counts.empty_commits, detail
        assert len(counts.commits) == len(counts.writes), detail
    finally:
        rt.close()


class CountingExecutor(ThreadPoolExecutor):
    """The loop's default executor (where `asyncio.to_thread`, and so `storage.off_loop`,
    sends work), noting the name of each piece of work it is sent."""

    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.trips: list[str] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        work = fn.args[0] if isinstance(fn, partial) and fn.args else fn  # to_thread's ctx.run
        self.trips.append(getattr(work, "__qualname__", ""))
        return super().submit(fn, *args, **kwargs)


async def test_a_one_tool_turn_takes_three_trips_to_a_worker_thread(
        settings: Settings, server: ScriptedOpenAIServer) -> None:
    """A one-tool turn's database work takes three trips to a worker thread: its admission
    (with the first prompt's read, right after its commit), the step's write (behind the
    next model call; its prompt is not read back), and its end. Each trip waits for a
    thread, and then for the event loop to hear the answer: traced over sequential turns,
    the first read took 4-5 ms of a 51 ms turn on a trip of its own, and the write and the
    read after it 1.8 ms more on two."""
    rt = scripted_runtime(settings, server, side_stale_after_s=600.0)
    executor = CountingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    try:
        server.reply_text("Hello.")
        await turn(rt, "hi")  # the conversation exists; the counted turn is its second
        server.reply_tool_calls(call("list_dashboards"))
        server.reply_text("There are dashboards.")
        executor.trips.clear()
        transactions = rt.db.group.transactions
        events = await turn(rt, "list the dashboards")
        assert events[-1]["status"] == "completed"
        trips = [work for work in executor.trips
                 if work.startswith(("Admission.", "PromptWindow.", "RunStore.", "GroupCommit."))]
        # The step's write, then the end, each committed by `storage.group_commit` in a
        # transaction of its own (the end waits for the step's write): two trips, or one
        # when the end arrives while the committing thread is still there, since it
        # commits whatever waits before it leaves (seen on PostgreSQL in CI).
        assert trips[0] == "Admission.turn"
        assert trips[1:] in (["GroupCommit._commit_waiting"] * 2,
                             ["GroupCommit._commit_waiting"])
        assert rt.db.group.transactions - transactions == 2
    finally:
        rt.close()


async def test_a_turn_writes_its_messages_run_and_lease_without_the_orms_unit_of_work(
        settings: Settings, server: ScriptedOpenAIServer) -> None:
    """Messages, the run and its lease go in as plain INSERTs: flushing them through the
    ORM's unit of work (which also fetched every new message's id, read by nobody) was a
    third of a write's CPU, four or five times a turn."""
    rt = scripted_runtime(settings, server, side_stale_after_s=600.0)
    flushed: list[str] = []

    def before_flush(session: Any, _context: Any, _instances: Any) -> None:
        flushed.extend(type(row).__name__ for row in session.new)

    event.listen(OrmSession, "before_flush", before_flush)
    try:
        server.reply_tool_calls(call("list_dashboards"))
        server.reply_text("There are dashboards.")
        events = await turn(rt, "list the dashboards")
        assert events[-1]["status"] == "completed"
        with rt.db.read() as session:
            assert len(repo.list_messages(session=session, conversation_id="conv-g")) == 4
        assert not [name for name in flushed if name in ("Message", "Run", "RunLease")], \
            flushed
    finally:
        event.remove(OrmSession, "before_flush", before_flush)
        rt.close()
