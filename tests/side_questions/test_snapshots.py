"""Snapshots: compare-and-set ordering, coalesced writes, retry on failure, and capture from
the real agent loop (no half reply, tool calls paired, no secrets in any stored row)."""

from __future__ import annotations

import asyncio
import random
import threading
import time

from sqlalchemy import select
from sqlmodel import SQLModel

from agent.snapshots import ContextSnapshot, make_snapshot
from runtime import build_runtime
from side_questions.snapshot_store import SnapshotStore
from storage import Database
from storage import conversations as conv_repo
from storage.side_models import SideQuestionSession
from tests.side_questions.conftest import API_KEY, WriteCounter, side_settings


def _snapshot(parent: str, run: str, version: int, started: float) -> ContextSnapshot:
    return make_snapshot(conversation_id=parent, run_id=run, version=version,
                         boundary="reply", system_prompt="sp",
                         messages=[{"role": "user", "content": f"{run}:{version}"}], tools=[],
                         params={}, model="m", api_base=None, run_started_at=started)


def _conversation(db: Database, parent: str) -> None:
    with db.session() as session:
        conv_repo.create_conversation(session=session, owner_id="u", conversation_id=parent)


def test_racing_writers_newest_wins(db: Database) -> None:
    _conversation(db, "p")
    store = SnapshotStore(db)
    keys = [(float(started), f"run-{started}", version)
            for started in (1, 2, 3) for version in range(1, 6)]
    for round_ in range(3):
        random.Random(round_).shuffle(keys)
        barrier = threading.Barrier(4)

        def writer(part: list[tuple[float, str, int]], barrier: threading.Barrier,
                   offset: int) -> None:
            barrier.wait()
            for started, run, version in part:
                store.save(_snapshot("p", run, version + offset, started))

        threads = [threading.Thread(target=writer, args=(keys[i::4], barrier, round_ * 10))
                   for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        loaded = store.load("p")
        assert loaded is not None
        assert (loaded.run_id, loaded.version) == ("run-3", 5 + round_ * 10)
        assert loaded.messages[0]["content"] == f"run-3:{5 + round_ * 10}"
    assert not store.save(_snapshot("p", "run-2", 99, 2.0))  # an older run never wins


async def test_store_coalesces_releases_and_retries(db: Database) -> None:
    store = SnapshotStore(db, interval_s=0.25)
    counter = WriteCounter(db, "side_question_sessions")
    try:
        store(_snapshot("late", "r", 1, 1.0))  # the conversation does not exist yet: fails
        await asyncio.sleep(0.1)
        assert store.pending("late") is not None  # kept for a retry
        _conversation(db, "late")
        assert await store.flush("late")
        assert store.pending("late") is None and store.load("late").version == 1
        counter.count = 0
        started = time.monotonic()
        for version in range(2, 60):
            store(_snapshot("late", "r", version, 1.0))
            await asyncio.sleep(0.01)
        assert await store.flush("late")
        elapsed = time.monotonic() - started
        assert store.load("late").version == 59
        assert store.pending("late") is None  # released after the save
        # ensure_session + CAS update per save
        assert counter.count <= 2 * (2 + elapsed / 0.25)
    finally:
        counter.close()
        await store.aclose()


def _all_rows_text(db: Database) -> str:
    parts = []
    with db.engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            parts.extend(repr(row) for row in conn.execute(select(table)))
    return "\n".join(parts)


async def test_loop_snapshot_mid_stream_has_no_half_reply(db, server, gateway,  # type: ignore[no-untyped-def]
                                                          database_url) -> None:
    from tests.fakes.openai_server import ScriptedCall

    settings = side_settings(database_url, server)
    runtime = build_runtime(settings, gateway=gateway, database=db)
    counter = WriteCounter(db, "side_question_sessions")
    server.reply_tool_calls(ScriptedCall("show_capabilities", "{}"))
    held = server.reply_text("SENTINEL-HALF-REPLY and more words", deltas=3, hold_after=2,
                             cut_after=3)
    started = time.monotonic()
    live = await runtime.agent.start_turn(message="what can you do?", conv_id="c-main",
                                          user_id=None, user_jwt=None, env_id=None,
                                          uicontext_str=None)
    await held.until_reached()
    store: SnapshotStore = runtime.side_questions.snapshots
    await store.flush("c-main")
    snap = store.load("c-main")
    assert snap is not None and "SENTINEL" not in str(snap.messages)
    calls = [c["id"] for m in snap.messages for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in snap.messages if m["role"] == "tool"]
    assert calls and calls == results  # paired
    assert snap.model == settings.agent_model and API_KEY not in repr(snap)
    held.release.set()
    await asyncio.wait_for(live.finished.wait(), 30)
    assert live.status == "failed"  # the stream was cut: the last valid boundary stays
    await store.flush("c-main")
    after = store.load("c-main")
    assert after.version > snap.version and "SENTINEL" not in str(after.messages)
    duration = time.monotonic() - started
    text = _all_rows_text(db)
    assert "SENTINEL" not in text and API_KEY not in text
    with db.session() as session:
        assert session.get(SideQuestionSession, "c-main").snapshot_run_id == live.run_id
    assert counter.count <= 2 * (3 + duration / 0.25)
    counter.close()
    await runtime.side_questions.aclose()
