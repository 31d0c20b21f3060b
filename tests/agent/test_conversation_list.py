"""A person's conversation list: newest activity first, paged, searchable, renamed and
deleted by the owner only (issue 11, item 3)."""

from __future__ import annotations

import pytest
from sqlmodel import select

from agent.conversation_list import ConversationDirectory
from agent.errors import ConversationAccessError, InputError
from agent.identity import Identity
from runtime import Runtime
from storage import conversations as repo
from storage.models import Message, utcnow
from storage.side_models import SideQuestionRequest, SideQuestionSession

ME = Identity(user_id="demo-editor-aaa", name="Me", role="editor")
OTHER = Identity(user_id="demo-editor-bbb", name="Other", role="editor")


def _make(rt: Runtime, owner: Identity, titles: list[str]) -> list[str]:
    ids = []
    for title in titles:  # created in order: the last one is the newest
        with rt.db.session() as session:
            conversation = repo.create_conversation(session=session, owner_id=owner.user_id,
                                                    title=title)
            repo.append_message(session=session, conversation_id=conversation.id,
                                role="user", content=title)
            ids.append(conversation.id)
    return ids


def test_lists_only_my_conversations_newest_first_in_pages(runtime: Runtime) -> None:
    directory: ConversationDirectory = runtime.agent.conversations
    mine = _make(runtime, ME, [f"chat {i}" for i in range(25)])
    _make(runtime, OTHER, ["someone else's"])

    first = directory.page(ME, limit=10)
    second = directory.page(ME, limit=10, cursor=first.next_cursor)
    third = directory.page(ME, limit=10, cursor=second.next_cursor)

    listed = [item.id for page in (first, second, third) for item in page.items]
    assert listed == list(reversed(mine))
    assert third.next_cursor is None and len(third.items) == 5
    assert all(item.title != "someone else's" for item in first.items)


def test_activity_moves_a_conversation_to_the_top(runtime: Runtime) -> None:
    older, _newer = _make(runtime, ME, ["older", "newer"])
    with runtime.db.session() as session:
        repo.touch_conversation(session=session, conversation_id=older)
    assert [item.title for item in runtime.agent.conversations.page(ME).items] == [
        "older", "newer"]


def test_search_by_title_is_literal(runtime: Runtime) -> None:
    _make(runtime, ME, ["Sales review", "100% done", "Marketing", "sales_q4"])
    directory = runtime.agent.conversations
    assert {i.title for i in directory.page(ME, query="sales").items} == {
        "Sales review", "sales_q4"}
    assert [i.title for i in directory.page(ME, query="%").items] == ["100% done"]
    assert [i.title for i in directory.page(ME, query="s_q").items] == ["sales_q4"]
    with pytest.raises(InputError):
        directory.page(ME, query="x" * 101)


def test_a_bad_cursor_is_a_clear_error(runtime: Runtime) -> None:
    with pytest.raises(InputError, match="cursor is not valid"):
        runtime.agent.conversations.page(ME, cursor="not-a-cursor")


def test_rename_is_owner_only_and_validated(runtime: Runtime) -> None:
    (conv_id,) = _make(runtime, ME, ["old title"])
    directory = runtime.agent.conversations

    assert directory.rename(ME, conv_id, "  Q4 migration  ").title == "Q4 migration"
    with pytest.raises(ConversationAccessError):
        directory.rename(OTHER, conv_id, "mine now")
    with pytest.raises(ConversationAccessError):
        directory.rename(ME, "no-such-id", "x")
    for bad in ("", "   ", "x" * 201):
        with pytest.raises(InputError):
            directory.rename(ME, conv_id, bad)
    assert directory.page(ME).items[0].title == "Q4 migration"


def test_delete_cascades_to_messages_and_side_questions(runtime: Runtime) -> None:
    keep, gone = _make(runtime, ME, ["keep", "gone"])
    with runtime.db.session() as session:
        session.add(SideQuestionSession(parent_id=gone, snapshot={}, snapshot_version=1))
        session.add(SideQuestionRequest(parent_id=gone, question="q", status="completed",
                                        client_request_id="c1", generation=0, ordinal=1,
                                        created_at=utcnow()))
    directory = runtime.agent.conversations

    with pytest.raises(ConversationAccessError):
        directory.delete(OTHER, gone)
    directory.delete(ME, gone)

    with runtime.db.session() as session:
        assert repo.get_conversation(session=session, conversation_id=gone) is None
        assert session.exec(select(Message).where(Message.conversation_id == gone)).all() == []
        assert session.exec(select(SideQuestionRequest).where(
            SideQuestionRequest.parent_id == gone)).all() == []
        assert repo.get_conversation(session=session, conversation_id=keep) is not None
    with pytest.raises(ConversationAccessError):
        directory.delete(ME, gone)


def test_delete_is_refused_while_a_side_question_runs(runtime: Runtime) -> None:
    (conv_id,) = _make(runtime, ME, ["busy"])
    with runtime.db.session() as session:
        session.add(SideQuestionSession(parent_id=conv_id, snapshot={}, snapshot_version=1))
        session.add(SideQuestionRequest(parent_id=conv_id, question="q", status="running",
                                        client_request_id="c2", generation=0, ordinal=1,
                                        created_at=utcnow()))
    with pytest.raises(InputError, match="in progress"):
        runtime.agent.conversations.delete(ME, conv_id)
    assert runtime.agent.conversations.page(ME).items[0].id == conv_id
