"""A conversation with 10 000 stored messages (issue 16, item 4): opening it, reloading the
page, following a live run and every streamed update of a turn read a bounded number of
message rows and render a bounded chat; programs page its history with a cursor.

Rows are counted twice: every `Message` the ORM loads (SQLAlchemy's `load` event, which
also sees the agent's own bounded prompt reads), and the rows the chat's reads return (a
spy on the repository's listing functions). Statements that count messages are watched
too: a COUNT reads no row into Python but walks every earlier message's index entry, and
the chat's "N earlier messages" ran one on every turn, reload and page."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import Engine, event, func, select

from agent.history_window import read_window
from agent.identity.base import Identity
from bench.seed import copy_turns
from storage import conversations as repo
from storage.models import Message
from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer, sqlite_server
from web.chat_window import ChatView
from web.conversations_ui import ConversationHandlers
from web.handlers import Handlers
from web.page_runs import PageRuns
from web.signin import SignInHandlers

SEEDED = 10_000
# The chat's window is 50 stored messages (agent/history_window.py); a turn adds its own
# few. The model's prompt reads at most 2 × AGENT_HISTORY_MESSAGES (400) earlier rows per
# step, so a whole turn loads a few hundred rows: bounds with room, far below 10 000.
CHAT_BOUND = 80  # chat messages in any one update
READ_BOUND = 150  # rows the chat's reads return for one open, reload or turn
LOAD_BOUND = 2_500  # Message rows the ORM loads for a whole turn, prompts included


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory)


@pytest.fixture(scope="module")
def long_conversation(live_server: LiveServer) -> tuple[str, str, str]:
    """(conversation id, user id, token): a real one-tool turn of the app, copied into a
    conversation of 10 000 messages (whole turns, each with its run)."""
    client = api_client(live_server.agent_url)
    user_id, token = live_server.token("editor")
    _, events = client.predict("which environments are there?", None, "", user_id, token,
                               "ss-dev", None, api_name="/agent_handler")
    client.close()
    url = live_server.runtime.settings.database_url
    conv_id, count = copy_turns(url, events[0]["conv_id"], user_id, SEEDED)
    assert count >= SEEDED
    return conv_id, user_id, token


def _text(message: dict[str, Any]) -> str:
    """A chat message's text (gradio_client returns content as a list of blocks)."""
    content = message["content"]
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


@contextlib.contextmanager
def counting(monkeypatch: pytest.MonkeyPatch, engine: Engine) -> Iterator[SimpleNamespace]:
    """`.loaded`: Message rows the ORM loaded; `.listed`: rows the repository's listing
    functions returned (the chat's reads); `.counts`: statements counting messages."""
    seen = SimpleNamespace(loaded=0, listed=0, counts=[])

    def loaded(*_: Any) -> None:
        seen.loaded += 1

    def executed(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        flat = " ".join(statement.lower().split())
        if "count(" in flat and "from messages" in flat:
            seen.counts.append(flat[:120])

    def spy(original: Callable[..., Any]) -> Callable[..., Any]:
        def listed(*args: Any, **kwargs: Any) -> Any:
            rows = original(*args, **kwargs)
            seen.listed += len(rows)
            return rows
        return listed

    for name in ("list_messages", "list_message_window", "list_messages_from"):
        if hasattr(repo, name):
            monkeypatch.setattr(repo, name, spy(getattr(repo, name)))
    event.listen(Message, "load", loaded)
    event.listen(engine, "before_cursor_execute", executed)
    try:
        yield seen
    finally:
        event.remove(Message, "load", loaded)
        event.remove(engine, "before_cursor_execute", executed)
        monkeypatch.undo()


def test_a_turn_streams_a_bounded_chat_and_reads_bounded_rows(
        live_server: LiveServer, long_conversation: tuple[str, str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    conv_id, user_id, token = long_conversation
    client = api_client(live_server.agent_url)
    with counting(monkeypatch, live_server.runtime.db.engine) as seen:
        job = client.submit("hello", None, conv_id, user_id, token, "ss-dev", None,
                            api_name="/agent_handler")
        updates = list(job)
    client.close()
    assert updates and updates[-1][1][-1]["type"] == "done"
    assert updates[-1][1][-1]["status"] == "completed", updates[-1][1][-1]
    sizes = [len(chat) for chat, _ in updates]
    assert max(sizes) <= CHAT_BOUND, sizes
    assert "Show earlier messages" in _text(updates[-1][0][0])
    assert seen.counts == []
    assert "hello" in " ".join(_text(m) for m in updates[-1][0] if m["role"] == "user")
    print(f"turn: {seen.listed} rows listed, {seen.loaded} loaded, chat sizes {sizes}")
    assert seen.listed <= READ_BOUND, seen.listed
    assert seen.loaded <= LOAD_BOUND, seen.loaded


def test_opening_reloading_and_following_read_bounded_rows(
        live_server: LiveServer, long_conversation: tuple[str, str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    conv_id, user_id, token = long_conversation
    handlers = Handlers(live_server.runtime, SignInHandlers(live_server.runtime))
    tab = SimpleNamespace(session_hash="a-tab")

    async def journey() -> dict[str, Any]:
        opened = await ConversationHandlers(handlers).open(conv_id, user_id, token, "editor",
                                                           request=tab)
        _, reloaded = await handlers._restore(conv_id, user_id, token)
        runs = PageRuns(handlers)
        _, shown, _ = await runs.submit("hello again", conv_id, user_id, token, "ss-dev",
                                        None, "editor", request=tab)
        followed = [update async for update in runs.follow(conv_id, user_id, token, tab)]
        return {"opened": opened[1], "reloaded": reloaded, "submitted": shown,
                "followed": [chat for chat, _, _ in followed]}

    with counting(monkeypatch, live_server.runtime.db.engine) as seen:
        chats = asyncio.run(journey())
    for name in ("opened", "reloaded", "submitted"):
        assert len(chats[name]) <= CHAT_BOUND, (name, len(chats[name]))
        assert "Show earlier messages" in _text(chats[name][0]), name
    followed = [chat for chat in chats["followed"] if isinstance(chat, list)]
    assert followed and max(len(chat) for chat in followed) <= CHAT_BOUND
    assert any("hello again" in _text(m) for m in followed[-1] if m["role"] == "user")
    print(f"page: {seen.listed} rows listed, {seen.loaded} loaded")
    assert seen.counts == []
    assert seen.listed <= 2 * READ_BOUND, seen.listed
    assert seen.loaded <= LOAD_BOUND, seen.loaded


def test_programs_page_the_history_with_a_cursor(
        live_server: LiveServer, long_conversation: tuple[str, str, str]) -> None:
    conv_id, user_id, token = long_conversation
    client = api_client(live_server.agent_url)
    newest = client.predict(conv_id, user_id, token, api_name="/conversation_history")
    older = client.predict(conv_id, user_id, token, newest["next_cursor"],
                           api_name="/conversation_history")
    with pytest.raises(Exception, match="cursor is not valid"):
        client.predict(conv_id, user_id, token, "soon", api_name="/conversation_history")
    client.close()
    for page in (newest, older):
        assert 0 < len(page["messages"]) <= 50
        assert page["messages"][0]["role"] == "user"  # whole turns
        seqs = [m["seq"] for m in page["messages"]]
        assert seqs == sorted(seqs)
    assert older["messages"][-1]["seq"] == newest["messages"][0]["seq"] - 1
    assert newest["next_cursor"] == str(newest["messages"][0]["seq"])


def test_the_earlier_messages_are_numbered_not_counted(
        live_server: LiveServer, long_conversation: tuple[str, str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The chat's "N earlier messages" is the window's first number less one (messages are
    numbered without gaps, `storage.conversations.messages_before`): what a COUNT of them
    gives, with no COUNT run, for the newest window and a page back."""
    conv_id, user_id, _ = long_conversation
    db = live_server.runtime.db
    who = Identity(user_id=user_id, name=user_id, role="editor")
    with counting(monkeypatch, db.engine) as seen:
        newest = read_window(db, who, conv_id)
        older = read_window(db, who, conv_id, before_seq=newest.start_seq)
    assert seen.counts == []
    with db.read() as session:
        for window in (newest, older):
            counted = session.execute(select(func.count()).select_from(Message).where(
                Message.conversation_id == conv_id, Message.seq < window.start_seq)).scalar()
            assert window.earlier == counted > 9_000
    assert f"{newest.earlier:,}".replace(",", " ") in ChatView(newest).render([])[0]["content"]
