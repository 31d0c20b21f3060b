"""A page's follower sends the run's events (the page's "Events of the last run") only when
an event other than a token came, and always ends with all of them; and sends the growing
answer as appends. Both read one turn, followed once (the `followed` fixture).

Why: Gradio's JSON postprocess had every streamed update send the component's value whole,
so the events went to the page in full with every word: 3.4 MB of 3.6 MB on the page's
event stream for one "what can you do?" answer, measured with the tee in
tests/web/test_hidden_tab_browser.py. The follower's updates now leave in wire form, where
the events go as appends (`web/wire_updates.py`); skipping them spares even the diff."""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pytest
from gradio.utils import diff

from tests.web.conftest import LiveServer, sqlite_server
from web.chat_window import render_window
from web.handlers import Handlers
from web.page_runs import PageRuns
from web.signin import SignInHandlers

ASKED = "what can you do?"  # a long answer: many token events


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory, offline_token_delay_ms=5)


@dataclass
class FollowedRun:
    """One "what can you do?" turn sent and followed to its end by the page's follower."""

    updates: list[tuple[Any, Any, Any]]  # (chat, events, stop) per streamed update
    events: list[dict[str, Any]]  # the run's events
    stored: list[dict[str, Any]]  # the chat as shown from storage afterwards


@pytest.fixture(scope="module")
def followed(live_server: LiveServer) -> FollowedRun:
    handlers = Handlers(live_server.runtime, SignInHandlers(live_server.runtime))
    user_id, token = live_server.token("editor")
    tab = SimpleNamespace(session_hash=f"tab-{uuid.uuid4().hex[:8]}")
    conv_id = str(uuid.uuid4())

    async def journey() -> tuple[list[tuple[Any, Any, Any]], list[dict[str, Any]]]:
        runs = PageRuns(handlers)
        handlers.views.switch(tab, conv_id)
        await runs.submit(ASKED, conv_id, user_id, token, "ss-dev", None, "editor",
                          request=tab)
        updates = [update async for update in runs.follow(conv_id, user_id, token, tab)]
        service = handlers.service
        identity = await service.authenticate(user_id, token)
        return updates, render_window(service.history_window(identity, conv_id),
                                      handlers.policy)

    updates, stored = asyncio.run(journey())
    live = live_server.runtime.agent.live_run(conv_id)
    assert live is not None and live.status == "completed"
    return FollowedRun(updates, live.events, stored)


def test_the_follower_sends_the_events_when_more_than_a_token_came_and_ends_with_all(
        followed: FollowedRun) -> None:
    updates = followed.updates
    sent = [events for _, events, _ in updates if isinstance(events, list)]
    not_tokens = [event for event in followed.events if event["type"] != "token"]
    assert len(updates) > 2 * len(not_tokens)  # the answer streamed in many updates
    assert 1 <= len(sent) <= len(not_tokens)
    assert sent[-1] == followed.events  # the page ends with every event of the run
    for _, events, _ in updates:
        if not isinstance(events, list):
            assert events == {"__type__": "update"}  # gr.skip(): the page keeps its value


def test_a_growing_answer_goes_to_the_page_as_appends_and_ends_whole(
        followed: FollowedRun) -> None:
    """Gradio sends a streamed text that begins with the previous one as an `append` of the
    rest, else whole. A growing answer's HTML was never a prefix of the next (its closing
    tags; a table row's cells), so each update carried the whole answer
    (web/stream_text.py)."""
    updates, stored = followed.updates, followed.stored
    chats = [chat for chat, _, _ in updates]
    chatbot = gr.Chatbot(render_markdown=False)  # what Gradio diffs: the component's data
    sent_data = [chatbot.postprocess(chat).model_dump() for chat in chats]
    edits = [edit for before, after in itertools.pairwise(sent_data)
             for edit in diff(before, after) if "content" in edit[1]]
    ops = Counter(op for op, _, _ in edits)
    # Before: 53 replaces and 1 append, 114 kB (the answer is a table; a row streaming
    # moved its cells). Now: appends only, 6 kB.
    assert ops["append"] >= 10 and ops["replace"] <= 2, ops
    sent = sum(len(json.dumps(value)) for _, _, value in edits)
    shown = sum(len(message["content"]) for message in chats[-1])
    assert sent < 2 * shown, (sent, shown)  # about what the chat shows, sent once
    # The last update carries the answer whole (closing tags too): what the chat keeps.
    # (The footer after it says the run's time, measured live or as stored: 0.1 s apart
    # under load, so the answer itself is compared.)
    last, kept = (next(m["content"] for m in chat if "explicit approval" in m["content"])
                  for chat in (chats[-1], stored))
    assert last == kept and last.endswith("</p>")
