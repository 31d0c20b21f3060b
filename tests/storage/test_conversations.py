"""Repository functions for conversations, messages and runs, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import delete, func, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from storage import conversations as repo
from storage.db import Database, make_engine
from storage.models import Conversation, Message, Run
from tests.waits import EVENT_WAIT_S


def _conversation(db: Database, conv_id: str = "c1", owner: str = "alice") -> None:
    with db.session() as session:
        repo.create_conversation(session=session, owner_id=owner, conversation_id=conv_id)


def test_create_and_get_a_conversation(db: Database) -> None:
    with db.session() as session:
        named = repo.create_conversation(session=session, owner_id="alice",
                                         conversation_id="c1", title="Sales " * 100)
        generated = repo.create_conversation(session=session, owner_id="bob")
    with db.session() as session:
        loaded = repo.get_conversation(session=session, conversation_id="c1")
        other = repo.get_conversation(session=session, conversation_id=generated.id)
        missing = repo.get_conversation(session=session, conversation_id="nope")

    assert loaded is not None and loaded.owner_id == "alice"
    assert loaded.title == named.title and len(loaded.title) == 200
    assert other is not None and other.title == "New conversation" and len(other.id) == 36
    assert missing is None


def test_a_conversation_id_is_unique(db: Database) -> None:
    _conversation(db)

    with pytest.raises(IntegrityError), db.session() as session:
        repo.create_conversation(session=session, owner_id="mallory", conversation_id="c1")

    with db.session() as session:
        assert repo.get_conversation(session=session, conversation_id="c1").owner_id == "alice"


def test_messages_are_numbered_per_conversation_and_listed_in_order(db: Database) -> None:
    _conversation(db, "c1")
    _conversation(db, "c2")
    with db.session() as session:
        for index in range(3):
            repo.append_message(session=session, conversation_id="c1", role="user",
                                content=f"c1-{index}")
            repo.append_message(session=session, conversation_id="c2", role="user",
                                content=f"c2-{index}")
    # a row written out of order still lists by seq (as a migrated database may hold them,
    # its counter set from the newest row by the migration)
    with db.session() as session:
        session.add(Message(conversation_id="c1", seq=10, role="assistant", content="late"))
        session.add(Message(conversation_id="c1", seq=5, role="assistant", content="early"))
        session.execute(text("UPDATE conversations SET last_seq = 10 WHERE id = 'c1'"))

    with db.session() as session:
        c1 = repo.list_messages(session=session, conversation_id="c1")
        c2 = repo.list_messages(session=session, conversation_id="c2")
        appended = repo.append_message(session=session, conversation_id="c1",
                                       role="user", content="next")

    assert [m.seq for m in c1] == [1, 2, 3, 5, 10]
    assert [m.content for m in c1] == ["c1-0", "c1-1", "c1-2", "early", "late"]
    assert [m.seq for m in c2] == [1, 2, 3]
    assert appended.seq == 11


def test_conversation_and_seq_are_unique_together(db: Database) -> None:
    _conversation(db)
    with db.session() as session:
        repo.append_message(session=session, conversation_id="c1", role="user", content="a")

    with pytest.raises(IntegrityError), db.session() as session:
        session.add(Message(conversation_id="c1", seq=1, role="user", content="racing"))

    with db.session() as session:
        assert [m.content for m in repo.list_messages(session=session,
                                                      conversation_id="c1")] == ["a"]


def test_a_message_needs_an_existing_conversation(db: Database) -> None:
    with pytest.raises(LookupError), db.session() as session:
        repo.append_message(session=session, conversation_id="ghost", role="user",
                            content="boo")


def test_a_batch_is_numbered_in_order_by_one_counter_bump(db: Database) -> None:
    _conversation(db)
    with db.session() as session:
        repo.append_message(session=session, conversation_id="c1", role="user", content="q")
        rows = repo.append_messages(session=session, conversation_id="c1", messages=[
            {"role": "assistant", "content": "", "run_id": "r"},
            {"role": "tool", "content": "[]", "tool_call_id": "x", "run_id": "r"}])
    assert [row.seq for row in rows] == [2, 3]
    with db.read() as session:
        assert repo.get_conversation(session=session, conversation_id="c1").last_seq == 3


def _blocked(db: Database, holder: dict[str, object]) -> bool:
    """Whether the second appender is waiting for the first one's transaction: on
    PostgreSQL its backend waits on a lock; on SQLite its connection has begun the write
    transaction it cannot get yet (the driver begins it right before the first write)."""
    if db.dialect == "postgresql":
        if "pid" not in holder:
            return False
        with db.engine.connect() as conn:
            return conn.execute(text("SELECT wait_event_type FROM pg_stat_activity "
                                     "WHERE pid = :pid"), {"pid": holder["pid"]}
                                ).scalar() == "Lock"
    raw = holder.get("dbapi")
    return bool(raw is not None and raw.in_transaction)  # type: ignore[attr-defined]


def test_two_concurrent_appenders_get_distinct_consecutive_numbers(db: Database) -> None:
    """The second appender reads and writes while the first one's transaction is open. With
    `max(seq) + 1` both took the same number and the second failed on the unique key; the
    counter's row makes the second wait for the first and number after it."""
    _conversation(db)
    first_holds, errors = threading.Event(), []
    second: dict[str, object] = {}

    def first() -> None:
        try:
            with db.session() as session:
                repo.append_message(session=session, conversation_id="c1", role="user",
                                    content="first")
                first_holds.set()
                deadline = time.monotonic() + EVENT_WAIT_S
                while not _blocked(db, second):  # a state, polled; not a fixed wait
                    assert time.monotonic() < deadline, "the second appender never waited"
                    time.sleep(0.01)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)
            first_holds.set()

    def then() -> None:
        try:
            assert first_holds.wait(EVENT_WAIT_S)
            with db.session() as session:
                if db.dialect == "postgresql":
                    second["pid"] = session.execute(text("SELECT pg_backend_pid()")).scalar()
                else:
                    second["dbapi"] = session.connection().connection.dbapi_connection
                repo.append_message(session=session, conversation_id="c1", role="user",
                                    content="second")
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=first), threading.Thread(target=then)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=EVENT_WAIT_S)
    assert errors == []
    with db.read() as session:
        rows = repo.list_messages(session=session, conversation_id="c1")
        counter = repo.get_conversation(session=session, conversation_id="c1").last_seq
    assert [(row.seq, row.content) for row in rows] == [(1, "first"), (2, "second")]
    assert counter == 2


def test_structured_fields_round_trip(db: Database) -> None:
    calls = [{"id": "call_1", "type": "function",
              "function": {"name": "get_dashboard", "arguments": '{"dashboard_id": 42}'}}]
    _conversation(db)
    with db.session() as session:
        repo.append_message(session=session, conversation_id="c1", role="assistant",
                            content="", tool_calls=calls, run_id="r1")
        repo.append_message(session=session, conversation_id="c1", role="tool",
                            content="Ünïcödé ✓ " + "x" * 100_000, tool_call_id="call_1",
                            tool_name="get_dashboard",
                            meta={"status": "done", "duration_ms": 12, "truncated": False})

    with db.session() as session:
        assistant, tool = repo.list_messages(session=session, conversation_id="c1")

    assert assistant.tool_calls == calls and assistant.run_id == "r1"
    assert assistant.content == ""
    assert tool.content.startswith("Ünïcödé ✓ ") and len(tool.content) == 100_010
    assert (tool.tool_call_id, tool.tool_name) == ("call_1", "get_dashboard")
    assert tool.meta == {"status": "done", "duration_ms": 12, "truncated": False}


def test_runs_start_and_finish(db: Database) -> None:
    _conversation(db)
    with db.session() as session:
        started = repo.start_run(session=session, run_id="r1", conversation_id="c1",
                                 user_id="alice", model="openai/scripted", env_id="ss-dev")
    assert started.status == "running" and started.ended_at is None

    with db.session() as session:
        repo.finish_run(session=session, run_id="r1", status="failed",
                        usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
                        error="ModelError: boom")
        repo.finish_run(session=session, run_id="unknown", status="completed", usage=None,
                        error=None)  # a no-op, not an error
    with db.session() as session:
        run = repo.get_run(session=session, run_id="r1")

    assert run is not None
    assert (run.status, run.error, run.model, run.env_id) == (
        "failed", "ModelError: boom", "openai/scripted", "ss-dev")
    assert run.usage == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert run.ended_at is not None and run.ended_at >= run.started_at


def test_touch_updates_the_time_and_only_a_default_title(db: Database) -> None:
    with db.session() as session:
        repo.create_conversation(session=session, owner_id="a", conversation_id="untitled")
        repo.create_conversation(session=session, owner_id="a", conversation_id="titled",
                                 title="Mine")
    with db.session() as session:
        before = repo.get_conversation(session=session, conversation_id="untitled").updated_at
        repo.touch_conversation(session=session, conversation_id="untitled", title="Sales")
        repo.touch_conversation(session=session, conversation_id="titled", title="Sales")
        repo.touch_conversation(session=session, conversation_id="missing")

    with db.session() as session:
        untitled = repo.get_conversation(session=session, conversation_id="untitled")
        titled = repo.get_conversation(session=session, conversation_id="titled")
    assert untitled.title == "Sales" and untitled.updated_at >= before
    assert titled.title == "Mine"


def test_deleting_a_conversation_cascades_to_messages_and_runs(db: Database) -> None:
    for conv_id in ("gone", "kept"):
        _conversation(db, conv_id)
        with db.session() as session:
            repo.append_message(session=session, conversation_id=conv_id, role="user",
                                content="hi")
            repo.start_run(session=session, run_id=f"run-{conv_id}", conversation_id=conv_id,
                           user_id="alice", model="m", env_id=None)

    with db.session() as session:
        session.exec(delete(Conversation).where(Conversation.id == "gone"))

    with db.session() as session:
        messages = session.exec(select(Message)).all()
        runs = session.exec(select(Run)).all()
    assert [m.conversation_id for m in messages] == ["kept"]
    assert [r.id for r in runs] == ["run-kept"]


def test_a_failed_session_rolls_back(db: Database) -> None:
    _conversation(db)

    with pytest.raises(RuntimeError), db.session() as session:
        repo.append_message(session=session, conversation_id="c1", role="user", content="x")
        raise RuntimeError("boom")

    with db.session() as session:
        assert list(repo.list_messages(session=session, conversation_id="c1")) == []


def test_schema_creation_is_idempotent(db: Database) -> None:
    _conversation(db)
    db.create_schema()
    with db.session() as session:
        assert repo.get_conversation(session=session, conversation_id="c1") is not None


def test_sqlite_pragmas(tmp_path) -> None:  # type: ignore[no-untyped-def]
    database = Database(f"sqlite:///{tmp_path}/nested/dir/agent.db")
    try:
        with database.engine.connect() as conn:
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 10_000
        assert database.dialect == "sqlite"
        assert (tmp_path / "nested" / "dir").is_dir()
    finally:
        database.dispose()


def test_engine_urls() -> None:
    engine = make_engine("postgresql://user:pw@127.0.0.1:1/db")
    try:
        assert engine.url.drivername == "postgresql+psycopg"
    finally:
        engine.dispose()
    with pytest.raises(ValueError, match="Unsupported"):
        make_engine("mysql://u@localhost/db")


def test_nul_characters_are_dropped_on_every_backend(db: Database) -> None:
    """PostgreSQL text cannot hold NUL; SQLite can. Both must accept the same input."""
    calls = [{"id": "call_1", "type": "function",
              "function": {"name": "x", "arguments": '{"q": "a\\u0000b"}'}}]
    with db.session() as session:
        repo.create_conversation(session=session, owner_id="a", conversation_id="c",
                                 title="ti\x00tle")
        repo.append_message(session=session, conversation_id="c", role="assistant",
                            content="he\x00llo", tool_calls=calls)
        repo.append_message(session=session, conversation_id="c", role="tool",
                            content="\x00", tool_call_id="call_1", tool_name="x",
                            meta={"note": "nul\x00inside"})
        repo.start_run(session=session, run_id="r", conversation_id="c", user_id="a",
                       model="m", env_id=None)
        repo.finish_run(session=session, run_id="r", status="failed", usage=None,
                        error="bad\x00error")

    with db.session() as session:
        conversation = repo.get_conversation(session=session, conversation_id="c")
        assistant, tool = repo.list_messages(session=session, conversation_id="c")
        run = repo.get_run(session=session, run_id="r")
    assert conversation.title == "title"
    assert assistant.content == "hello" and assistant.tool_calls == calls
    assert tool.content == ""
    assert run.error == "baderror"


def _turns(db: Database, conv_id: str, turns: int) -> None:
    """`turns` turns of four rows each: user, assistant call, tool result, answer."""
    with db.session() as session:
        for number in range(turns):
            repo.append_message(session=session, conversation_id=conv_id, role="user",
                                content=f"q{number}")
            repo.append_message(session=session, conversation_id=conv_id,
                                role="assistant", tool_calls=[{"id": f"call{number}"}])
            repo.append_message(session=session, conversation_id=conv_id, role="tool",
                                tool_call_id=f"call{number}", content="{}")
            repo.append_message(session=session, conversation_id=conv_id,
                                role="assistant", content=f"a{number}")


def test_the_chat_window_is_the_newest_whole_turns_and_pages_back(db: Database) -> None:
    """Issue 16, item 4: what the chat shows of a long conversation is a bounded read of
    its newest messages, starting at a user message, and the rest pages back by seq."""
    _conversation(db)
    _turns(db, "c1", 10)  # 40 rows, seq 1..40

    with db.session() as session:
        newest = repo.list_message_window(session=session, conversation_id="c1", limit=10)
        before = repo.list_message_window(session=session, conversation_id="c1", limit=10,
                                          before_seq=newest[0].seq)
        start = repo.list_message_window(session=session, conversation_id="c1", limit=10,
                                         before_seq=5)
        everything = repo.list_message_window(session=session, conversation_id="c1",
                                              limit=100)
        extended = repo.list_messages_from(session=session, conversation_id="c1",
                                           from_seq=before[0].seq)
        counts = [repo.messages_before(s) for s in (newest[0].seq, 1, 41)]

    # 10 rows back from 40 is seq 31 (a tool row); the window starts at the turn after it
    assert [m.seq for m in newest] == [33, 34, 35, 36, 37, 38, 39, 40]
    assert newest[0].role == "user" and newest[0].content == "q8"
    assert [m.seq for m in before] == list(range(25, 33)) and before[0].content == "q6"
    assert [m.seq for m in start] == [1, 2, 3, 4]  # the beginning: nothing is cut
    assert len(everything) == 40
    assert [m.seq for m in extended] == list(range(25, 41))
    assert counts == [32, 0, 40]


def test_messages_are_numbered_without_gaps_so_those_before_one_need_no_count(
        db: Database) -> None:
    """`messages_before(seq)` is `seq - 1` with no read (the chat's "N earlier messages"
    on every turn, reload and page; a COUNT walked every earlier message). That holds
    because numbering has no gap: an append whose transaction fails gives its numbers
    back, single and batched appends number on from one counter, and no message is
    deleted on its own."""
    _conversation(db)
    _turns(db, "c1", 2)
    with pytest.raises(RuntimeError), db.session() as session:
        repo.append_messages(session=session, conversation_id="c1", messages=[
            {"role": "user", "content": "lost"}, {"role": "assistant", "content": "lost"}])
        raise RuntimeError("the transaction fails after its append")
    with db.session() as session:
        repo.append_messages(session=session, conversation_id="c1", messages=[
            {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])
        repo.append_message(session=session, conversation_id="c1", role="user", content="z")

    with db.session() as session:
        seqs = [m.seq for m in repo.list_messages(session=session, conversation_id="c1")]
        counted = {seq: session.exec(select(func.count()).select_from(Message).where(
            Message.conversation_id == "c1", Message.seq < seq)).one() for seq in seqs}
    assert seqs == list(range(1, 12))
    assert all(repo.messages_before(seq) == counted[seq] for seq in seqs), counted


def test_a_turn_longer_than_the_window_is_shown_from_its_newest_rows(db: Database) -> None:
    _conversation(db)
    with db.session() as session:
        repo.append_message(session=session, conversation_id="c1", role="user", content="go")
        for number in range(20):
            repo.append_message(session=session, conversation_id="c1", role="assistant",
                                content=f"step {number}")
    with db.session() as session:
        window = repo.list_message_window(session=session, conversation_id="c1", limit=5)
    assert [m.content for m in window] == [f"step {n}" for n in range(15, 20)]
