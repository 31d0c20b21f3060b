"""A new conversation is created in its first turn's claim (agent/admission.py): the
conversation, the lease, the run and the person's message in one write transaction (before:
the conversation in one of its own first, then the claim). Someone creating the same id
between the admission's look and its claim still gets what they got before: the id is
theirs unless it is the same person's, and nothing of the refused turn is stored."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session as OrmSession

from agent.errors import ConversationAccessError
from agent.settings import Settings
from runtime import Runtime
from storage import conversations as repo
from storage import run_leases as leases_repo
from tests.agent.guardrails_support import scripted_runtime, user
from tests.fakes.openai_server import ScriptedOpenAIServer


@pytest.fixture
def rt(settings: Settings, server: ScriptedOpenAIServer) -> Iterator[Runtime]:
    runtime = scripted_runtime(settings, server, side_stale_after_s=600.0)
    yield runtime
    runtime.close()


@contextmanager
def transactions(rt: Runtime) -> Iterator[list[list[str]]]:
    """The statements of each committed transaction, in order."""
    committed: list[list[str]] = []
    open_: dict[int, list[str]] = {}
    lock = threading.Lock()

    def executed(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        with lock:
            open_.setdefault(id(conn), []).append(" ".join(statement.split())[:40])

    def commit(conn: Any) -> None:
        with lock:
            committed.append(open_.pop(id(conn), []))

    def rollback(conn: Any) -> None:
        with lock:
            open_.pop(id(conn), None)

    listeners = (("before_cursor_execute", executed), ("commit", commit),
                 ("rollback", rollback))
    for name, listener in listeners:
        event.listen(rt.db.engine, name, listener)
    try:
        yield committed
    finally:
        for name, listener in listeners:
            event.remove(rt.db.engine, name, listener)


@contextmanager
def created_meanwhile(rt: Runtime, owner_id: str) -> Iterator[list[str]]:
    """Just before the admission inserts the conversation, someone else's session creates
    (and commits) the same id for `owner_id`."""
    done: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.startswith("INSERT INTO conversations") and not done:
            done.append(parameters[0] if isinstance(parameters, tuple) else
                        parameters["id"])
            with rt.db.session() as session:
                repo.create_conversation(session=session, owner_id=owner_id,
                                         conversation_id=done[0], title="theirs")

    event.listen(rt.db.engine, "before_cursor_execute", before)
    try:
        yield done
    finally:
        event.remove(rt.db.engine, "before_cursor_execute", before)


def _writes(committed: list[list[str]]) -> list[list[str]]:
    return [sql for sql in committed
            if any(s.startswith(("INSERT", "UPDATE", "DELETE")) for s in sql)]


def test_a_new_conversations_first_turn_is_admitted_in_one_write_transaction(
        rt: Runtime) -> None:
    identity, token = user(rt, "admin")
    with transactions(rt) as committed:
        request = rt.agent.admission.turn(identity, "hello", "conv-new", "ss-dev", None,
                                          token)
    writes = _writes(committed)
    assert len(writes) == 1, committed  # before: 2 (the conversation, then the claim)
    assert [s.split(" (")[0] for s in writes[0] if s.startswith("INSERT")] == [
        "INSERT INTO conversations", "INSERT INTO run_leases", "INSERT INTO runs",
        "INSERT INTO messages"]
    with rt.db.read() as session:
        conversation = repo.get_conversation(session=session, conversation_id="conv-new")
        assert conversation is not None and conversation.owner_id == identity.user_id
        assert conversation.title == "hello"
        assert [m.content for m in repo.list_messages(
            session=session, conversation_id="conv-new")] == ["hello"]
    assert request.user_stored and request.first_read is not None
    rt.agent.admission.leases.release(request.run_id)


def test_an_id_someone_else_created_meanwhile_is_refused_and_nothing_is_stored(
        rt: Runtime) -> None:
    identity, token = user(rt, "admin")
    with created_meanwhile(rt, owner_id="someone-else") as created, \
            pytest.raises(ConversationAccessError):
        rt.agent.admission.turn(identity, "hello", "conv-taken", "ss-dev", None, token)
    assert created == ["conv-taken"]
    with rt.db.read() as session:
        conversation = repo.get_conversation(session=session, conversation_id="conv-taken")
        assert conversation is not None and conversation.owner_id == "someone-else"
        assert conversation.title == "theirs"
        assert repo.list_messages(session=session, conversation_id="conv-taken") == []
        assert leases_repo.get(session=session, conversation_id="conv-taken") is None


def test_an_id_the_same_person_created_meanwhile_is_claimed_as_it_is(rt: Runtime) -> None:
    identity, token = user(rt, "admin")
    with created_meanwhile(rt, owner_id=identity.user_id) as created:
        request = rt.agent.admission.turn(identity, "hello", "conv-mine", "ss-dev", None,
                                          token)
    assert created == ["conv-mine"]
    with rt.db.read() as session:
        assert [m.content for m in repo.list_messages(
            session=session, conversation_id="conv-mine")] == ["hello"]
        lease = leases_repo.get(session=session, conversation_id="conv-mine")
        assert lease is not None and lease.run_id == request.run_id
    rt.agent.admission.leases.release(request.run_id)


@contextmanager
def statements(rt: Runtime) -> Iterator[list[str]]:
    """Every statement the engine runs, in order."""
    seen: list[str] = []

    def executed(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(" ".join(statement.split()))

    event.listen(rt.db.engine, "before_cursor_execute", executed)
    try:
        yield seen
    finally:
        event.remove(rt.db.engine, "before_cursor_execute", executed)


@pytest.mark.parametrize("how", ["no id", "a new chat's id"])
async def test_a_turn_on_an_id_this_process_made_up_creates_it_without_reading_first(
        rt: Runtime, how: str) -> None:
    """A turn without an id, or on the id a page got for a new chat (`new_conversation_id`,
    a random UUID): nobody's conversation can have it, so no read of it before the claim
    (a read transaction: on PostgreSQL a checkout, a SELECT and a ROLLBACK), no look for an
    earlier run of it, and the conversation is one INSERT statement, not the ORM's flush.
    Measured, the admission alone (best of 30 batches, two runs each): SQLite 1.55-1.58 ->
    0.95-1.00 ms, PostgreSQL 3.1-4.2 -> 2.2-2.4 ms."""
    conv_id = None if how == "no id" else rt.agent.new_conversation_id()
    identity, token = user(rt, "admin")
    flushed: list[str] = []

    def before_flush(session: Any, _context: Any, _instances: Any) -> None:
        flushed.extend(type(row).__name__ for row in session.new)

    event.listen(OrmSession, "before_flush", before_flush)
    with statements(rt) as seen:
        live = await rt.agent.start_turn(message="hello", conv_id=conv_id,
                                         user_id=identity.user_id, user_jwt=token,
                                         env_id="ss-dev", uicontext_str=None)
        await live.finished.wait()
    event.remove(OrmSession, "before_flush", before_flush)
    assert "Conversation" not in flushed
    conv_id = live.request.conversation_id if conv_id is None else conv_id
    assert live.request.conversation_id == conv_id
    claim = next(i for i, s in enumerate(seen) if s.startswith("INSERT INTO conversations"))
    assert not [s for s in seen[:claim] if "FROM conversations" in s], seen[:claim]
    assert not [s for s in seen if "max(runs.started_at)" in s], seen
    with rt.db.read() as session:
        conversation = repo.get_conversation(session=session, conversation_id=conv_id)
        assert conversation is not None and conversation.owner_id == identity.user_id
        assert conversation.title == "hello" and conversation.last_seq >= 1
        assert [m.content for m in repo.list_messages(
            session=session, conversation_id=conv_id)][:1] == ["hello"]


def test_an_id_the_caller_names_is_still_looked_up_first(rt: Runtime) -> None:
    """A conversation id from the page or a program may be someone's: it is read before
    the claim (its owner checked), as before."""
    identity, token = user(rt, "admin")
    with statements(rt) as seen:
        request = rt.agent.admission.turn(identity, "hello", "conv-named", "ss-dev", None,
                                          token)
    claim = next(i for i, s in enumerate(seen) if s.startswith("INSERT INTO conversations"))
    assert [s for s in seen[:claim] if "FROM conversations" in s]
    rt.agent.admission.leases.release(request.run_id)


def test_a_made_up_id_someone_used_meanwhile_is_still_checked_for_its_owner(
        rt: Runtime) -> None:
    """The look skipped for a made-up id is what the claim's INSERT still catches: if the
    id was used meanwhile (by someone else here), the turn is refused and stores nothing;
    a made-up id is taken once, so a later turn on it is looked up as any id is."""
    identity, token = user(rt, "admin")
    conv_id = rt.agent.new_conversation_id()
    with created_meanwhile(rt, owner_id="someone-else") as created, \
            pytest.raises(ConversationAccessError):
        rt.agent.admission.turn(identity, "hello", conv_id, "ss-dev", None, token)
    assert created == [conv_id]
    with rt.db.read() as session:
        assert repo.list_messages(session=session, conversation_id=conv_id) == []
        assert leases_repo.get(session=session, conversation_id=conv_id) is None
    with statements(rt) as seen, pytest.raises(ConversationAccessError):
        rt.agent.admission.turn(identity, "again", conv_id, "ss-dev", None, token)
    assert [s for s in seen if "FROM conversations" in s]
    assert not [s for s in seen if s.startswith("INSERT")]
