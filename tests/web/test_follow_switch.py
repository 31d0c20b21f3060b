"""A page's follower whose tab switched to another conversation (New conversation, another
from the list) ends with that conversation's chat, not with nothing: an update of the old
run produced just before the switch can reach the browser after the switch's own answer
(it travels on the queue's stream, the switch's answer on its own request), and only an
update behind it on the same stream puts the shown conversation back. Seen in the browser
journey test_opening_another_conversation_stops_showing_a_live_run under load: the old
run's answer stayed on screen after "New conversation"."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from types import SimpleNamespace

import gradio as gr
import pytest

from tests.web.conftest import LiveServer, sqlite_server
from web.conversations_ui import ConversationHandlers
from web.handlers import Handlers
from web.page_runs import PageRuns
from web.signin import SignInHandlers

ASKED = "what can you do?"  # a long answer: with a per-token delay it streams for seconds


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory, offline_token_delay_ms=30)


def _texts(chat: list[dict]) -> str:
    return " ".join(str(message.get("content")) for message in chat)


def test_a_follower_that_finds_its_tab_switched_shows_the_new_conversation(
        live_server: LiveServer) -> None:
    handlers = Handlers(live_server.runtime, SignInHandlers(live_server.runtime))
    user_id, token = live_server.token("editor")
    tab = SimpleNamespace(session_hash=f"tab-{uuid.uuid4().hex[:8]}")
    conv_id = str(uuid.uuid4())
    fresh = str(uuid.uuid4())

    async def journey() -> tuple[list[dict], object]:
        runs = PageRuns(handlers)
        handlers.views.switch(tab, conv_id)
        await runs.submit(ASKED, conv_id, user_id, token, "ss-dev", None, "editor",
                          request=tab)
        follower = runs.follow(conv_id, user_id, token, tab)
        first, _, _ = await anext(follower)
        handlers.views.switch(tab, fresh)  # "New conversation" while the run streams
        rest = [update async for update in follower]
        live = live_server.runtime.agent.live_run(conv_id)
        assert live is not None
        await live.finished.wait()  # the run goes on: only the reading stopped
        return first, rest

    first, rest = asyncio.run(journey())
    assert isinstance(first, list) and ASKED in _texts(first)
    assert len(rest) == 1, rest  # it stopped at its next update
    chat, _, _ = rest[0]
    assert chat == [], chat  # the new conversation's (empty) chat, not a skip


def test_opening_from_the_list_stops_the_old_follower_before_the_window_is_read(
        live_server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """While `open` reads the picked conversation's window, the tab already shows it: a
    follower of the old one asking then is told to stop (its update made during the read
    could reach the page after the open's answer). A refused open (a token that does not
    verify) puts the old one back."""
    handlers = Handlers(live_server.runtime, SignInHandlers(live_server.runtime))
    user_id, token = live_server.token("editor")
    tab = SimpleNamespace(session_hash=f"tab-{uuid.uuid4().hex[:8]}")
    old, picked = str(uuid.uuid4()), str(uuid.uuid4())
    service = live_server.runtime.agent
    seen_during_read: list[bool] = []
    read_window = service.history_window

    def watched_read(*args: object, **kwargs: object) -> object:
        seen_during_read.append(handlers.views.still_showing(tab, old))
        return read_window(*args, **kwargs)

    monkeypatch.setattr(service, "history_window", watched_read)
    handlers.views.switch(tab, old)
    opener = ConversationHandlers(handlers)
    asyncio.run(opener.open(picked, user_id, token, "editor", request=tab))
    assert seen_during_read == [False]
    assert handlers.views.shown(tab) == picked

    with pytest.raises(gr.Error):
        asyncio.run(opener.open(old, user_id, "not-a-token", "editor", request=tab))
    assert handlers.views.shown(tab) == picked  # as before the refused open
