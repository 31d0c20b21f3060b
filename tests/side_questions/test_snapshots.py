"""Snapshots: compare-and-set ordering, coalesced writes, retry on failure, and capture from
the real agent loop (no half reply, tool calls paired, no secrets in any stored row)."""

from __future__ import annotations

import asyncio
import copy
import random
import threading
import time

from sqlalchemy import select
from sqlmodel import SQLModel

from agent.snapshots import ContextSnapshot, RunSnapshots, make_snapshot
from agent.tools.catalog import all_tools
from runtime import build_runtime
from side_questions.snapshot_store import SnapshotStore
from storage import Database
from storage import conversations as conv_repo
from storage.side_models import SideQuestionSession
from tests.side_questions.conftest import (
    API_KEY,
    WriteCounter,
    finished,
    seed_parent,
    side_settings,
)


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


async def test_parents_background_saves_queue_for_one_lane_and_a_flush_does_not(
        db: Database) -> None:
    """Nobody waits for a background save, but each is a write transaction: with fifty
    runs streaming, their saves all at once kept the writes runs wait for queued behind
    them. Parents' background saves take turns (`SnapshotStore.lane`); a side question's
    `flush` goes at once."""
    for parent in ("a", "b", "c"):
        _conversation(db, parent)
    store = SnapshotStore(db, interval_s=0.0)
    held, release, guard = threading.Event(), threading.Event(), threading.Lock()
    in_flight, most = 0, 0
    save = store.save

    def slow_save(snapshot: ContextSnapshot) -> bool:
        nonlocal in_flight, most
        if snapshot.conversation_id == "c":
            return save(snapshot)
        with guard:
            in_flight += 1
            most = max(most, in_flight)
        held.set()
        try:
            release.wait(30)
            return save(snapshot)
        finally:
            with guard:
                in_flight -= 1

    store.save = slow_save  # type: ignore[method-assign]
    try:
        store(_snapshot("a", "r", 1, 1.0))
        store(_snapshot("b", "r", 1, 1.0))
        assert await asyncio.to_thread(held.wait, 30)
        store(_snapshot("c", "r", 1, 1.0))
        assert await store.flush("c")  # while a background save holds the lane
        assert store.load("c").version == 1
        release.set()
        assert await store.flush("a") and await store.flush("b")
        assert store.load("a").version == store.load("b").version == 1
        assert most == 1
    finally:
        release.set()
        await store.aclose()


def _all_rows_text(db: Database) -> str:
    parts = []
    with db.engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            parts.extend(repr(row) for row in conn.execute(select(table)))
    return "\n".join(parts)


def test_a_runs_snapshots_share_one_copy_of_what_does_not_change() -> None:
    """The tool definitions and parameters are copied once per run (deep-copying the 23
    tools took 0.8 ms at every boundary), and that copy is the snapshots' own: changing
    the definitions the run was given, or the messages, leaves every snapshot as taken."""
    tools = [{"type": "function", "function": {"name": "list_dashboards", "parameters": {}}}]
    messages = [{"role": "user", "content": "hi"}]
    run = RunSnapshots(conversation_id="p", run_id="r", system_prompt="sp", tools=tools,
                       params={"temperature": 0.0}, model="m", api_base=None)
    first = run.take(version=1, boundary="request_start", messages=messages)
    messages.append({"role": "assistant", "content": "hello"})
    second = run.take(version=2, boundary="reply", messages=messages)
    assert first.tools is second.tools and first.params is second.params  # one copy a run
    assert first.model_digest == second.model_digest
    tools[0]["function"]["name"] = "changed"
    messages[0]["content"] = "changed"
    assert first.tools[0]["function"]["name"] == "list_dashboards"
    assert [m["content"] for m in first.messages] == ["hi"]
    assert [m["content"] for m in second.messages] == ["hi", "hello"]



def test_a_snapshot_copies_its_messages_whole_without_copy_deepcopy() -> None:
    """A snapshot's messages are a deep copy made by pickling (`data_copy`): nested tool
    calls and their arguments included, and without `copy.deepcopy`, whose walk in Python
    cost 1.28 ms a snapshot of a long conversation's prompt (400 messages) against 0.39."""
    run = RunSnapshots(conversation_id="p", run_id="r", system_prompt="sp", tools=[],
                       params={}, model="m", api_base=None)
    call = {"id": "c1", "type": "function",
            "function": {"name": "list_dashboards", "arguments": '{"page": 1}'}}
    messages = [{"role": "system", "content": "sp"}, {"role": "user", "content": "list"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "[]", "meta": {"n": [1]}}]
    walked: list[object] = []
    deepcopy = copy.deepcopy
    copy.deepcopy = lambda value, *rest: walked.append(value) or deepcopy(value, *rest)
    try:
        taken = run.take(version=1, boundary="reply", messages=messages)
    finally:
        copy.deepcopy = deepcopy
    call["function"]["arguments"] = "changed"
    messages[3]["meta"]["n"].append(2)
    assert walked == []
    assert [m["role"] for m in taken.messages] == ["user", "assistant", "tool"]
    assert taken.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"page": 1}'
    assert taken.messages[2]["meta"] == {"n": [1]}


def test_runs_offered_the_same_tools_share_one_copy_of_their_definitions() -> None:
    """Each run of a role on a page is offered the same definitions (built once per tool):
    one copy serves every such run, still apart from the definitions themselves."""
    tools = [spec.openai_schema for spec in all_tools()]

    def taken(run_id: str, offered: list[dict[str, object]]) -> ContextSnapshot:
        return RunSnapshots(conversation_id="p", run_id=run_id, system_prompt="sp",
                            tools=offered, params={}, model="m", api_base=None
                            ).take(version=1, boundary="request_start", messages=[])

    first, second = taken("r1", tools), taken("r2", list(tools))
    assert first.tools is second.tools
    assert first.tools == tools and first.tools[0] is not tools[0]
    fewer = taken("r3", tools[:3])
    assert fewer.tools == tools[:3] and fewer.tools is not first.tools

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


async def test_a_kept_snapshot_serves_until_a_newer_one_is_stored(side, db, server) -> None:  # type: ignore[no-untyped-def]
    """A submission reads the snapshot's payload only when its (run id, version) is not the
    one kept from the parent's last read; answering (through litellm) changes nothing in the
    kept one, and a newer stored snapshot is read by the next submission."""
    server.reply_text("one")
    first = await side.submit(parent_id="conv-1", question="q1?", client_request_id="k1")
    kept = side.snapshots.frozen("conv-1")
    assert kept is not None and kept.version == 1
    await finished(side, first.request.id)
    assert kept == SnapshotStore(db).load("conv-1")  # nothing mutated what is kept
    server.reply_text("two")
    await finished(side, (await side.submit(parent_id="conv-1", question="q2?",
                                            client_request_id="k2")).request.id)
    assert side.snapshots.frozen("conv-1") is kept
    seed_parent(db, side.settings, messages=[{"role": "user", "content": "newer"}],
                version=2)
    server.reply_text("three")
    third = await side.submit(parent_id="conv-1", question="q3?", client_request_id="k3")
    newer = side.snapshots.frozen("conv-1")
    assert newer is not None and newer.version == 2 and newer.messages[0]["content"] == "newer"
    await finished(side, third.request.id)
    assert server.side_requests()[-1].messages[1]["content"] == "newer"  # then the replay
