"""Runs that end at once are ended together (agent/run_store.py, storage/group_commit.py):
their ends wait behind the one committing, then commit in one transaction, instead of one
transaction (and one hand-off between worker threads) each."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from sqlalchemy import event

from runtime import Runtime
from storage import conversations as repo
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import collect
from tests.waits import EVENT_WAIT_S

RUNS = 4  # a person runs at most 4 at once (agent.service)
_END = "UPDATE runs SET status"


async def _until(condition: Any, timeout_s: float = EVENT_WAIT_S) -> None:
    """Wait for `condition()` to hold, checking as the loop runs (no fixed sleep to pass)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def test_runs_ending_while_one_end_commits_are_ended_in_one_transaction(
        rt: Runtime, server: ScriptedOpenAIServer) -> None:
    release = threading.Event()
    ends: list[list[str]] = []  # per committed transaction that ended a run: its statements
    open_: dict[int, list[str]] = {}
    held: list[bool] = []
    lock = threading.Lock()

    def before(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        with lock:
            open_.setdefault(id(conn), []).append(statement)
            first_end = statement.startswith(_END) and not held
            if first_end:
                held.append(True)
        if first_end:  # the first run's end waits, so the others' ends queue behind it
            assert release.wait(EVENT_WAIT_S)

    def committed(conn: Any) -> None:
        with lock:
            statements = open_.pop(id(conn), [])
            if any(s.startswith(_END) for s in statements):
                ends.append(statements)

    def rolled_back(conn: Any) -> None:
        with lock:
            open_.pop(id(conn), None)

    # Every run is admitted before any ends: their answers wait, then go on together.
    replies = [server.reply_text("Hello there.", deltas=2, hold_after=1) for _ in range(RUNS)]
    event.listen(rt.db.engine, "before_cursor_execute", before)
    event.listen(rt.db.engine, "commit", committed)
    event.listen(rt.db.engine, "rollback", rolled_back)
    try:
        lives = []
        for number in range(RUNS):
            identity, token = rt.issuer.mint_demo("viewer")
            lives.append(await rt.agent.start_turn(
                message="hello", conv_id=f"conv-{number}", user_id=identity.user_id,
                user_jwt=token, env_id="ss-dev", uicontext_str=None))
        for reply in replies:
            assert await reply.until_reached()
        for reply in replies:
            reply.release.set()
        # Every run is writing its end (queued as it says so: no await in between).
        await _until(lambda: all(live.request.finishing for live in lives))
        release.set()
        events = await asyncio.gather(*(collect(live, timeout_s=EVENT_WAIT_S)
                                        for live in lives))
    finally:
        release.set()
        for reply in replies:
            reply.release.set()
        event.remove(rt.db.engine, "before_cursor_execute", before)
        event.remove(rt.db.engine, "commit", committed)
        event.remove(rt.db.engine, "rollback", rolled_back)
    assert [run[-1]["status"] for run in events] == ["completed"] * RUNS
    ended = [sum(s.startswith(_END) for s in statements) for statements in ends]
    # The held end's transaction (the ends queued before its thread took them may be in
    # it), then the rest in one (before: one transaction each).
    assert sum(ended) == RUNS and len(ended) <= 2, ended
    with rt.db.read() as session:
        for number in range(RUNS):
            stored = repo.list_messages(session=session, conversation_id=f"conv-{number}")
            assert [(m.role, m.content) for m in stored] == [
                ("user", "hello"), ("assistant", "Hello there.")]
            assert repo.get_run(session=session, run_id=stored[-1].run_id
                                ).status == "completed"  # type: ignore[union-attr]
