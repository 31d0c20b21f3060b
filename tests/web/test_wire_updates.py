"""Streamed updates leave in Gradio's wire form, postprocessed on the event loop
(`web/wire_updates.py`), through a real app server and gradio_client."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import gradio as gr
import httpx
import pytest
from gradio_client import Client

from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer, sqlite_server
from web.wire_updates import wire_form, wired


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from sqlite_server(tmp_path_factory)


@pytest.fixture(scope="module")
def client(live_server: LiveServer) -> Client:
    return api_client(live_server.agent_url, download_files=False)


def _recording_threads(monkeypatch: pytest.MonkeyPatch, cls: type) -> list[threading.Thread]:
    seen: list[threading.Thread] = []
    original = cls.postprocess

    def postprocess(self: Any, value: Any) -> Any:
        seen.append(threading.current_thread())
        return original(self, value)

    monkeypatch.setattr(cls, "postprocess", postprocess)
    return seen


def test_a_turn_is_postprocessed_on_the_event_loop(client: Client, live_server: LiveServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Gradio's default runs every output's postprocess in a worker thread, per update;
    the API's streams do it on the loop's own thread (the uvicorn server's here), and the
    events need none."""
    chat_threads = _recording_threads(monkeypatch, gr.Chatbot)
    json_threads = _recording_threads(monkeypatch, gr.JSON)
    user_id, token = live_server.token("viewer")
    _, events = client.predict("what can you do?", None, "", user_id, token, "ss-dev",
                               api_name="/agent_handler")
    assert events[-1]["status"] == "completed"
    assert chat_threads and set(chat_threads) == {live_server.thread}
    assert json_threads == []


def test_every_update_carries_the_events_so_far(client: Client,
                                                live_server: LiveServer) -> None:
    """Each streamed update holds every event so far, in order (the client applies the
    diffs as gradio_client does); none is left for the end."""
    user_id, token = live_server.token("viewer")
    job = client.submit("what can you do?", None, "", user_id, token, "ss-dev",
                        api_name="/agent_handler")
    final_chat, final_events = job.result()
    updates = job.outputs()
    counts = [len(events) for _, events in updates]
    assert len(updates) >= 2 and counts == sorted(set(counts)), counts
    for (_, before), (_, after) in itertools.pairwise(updates):
        assert after[:len(before)] == before
    assert updates[-1][1] == final_events and updates[-1][0] == final_chat
    assert [message["role"] for message in final_chat][:1] == ["user"]


def _raw_updates(live_server: LiveServer, data: list[Any]) -> list[list[Any]]:
    """Each streamed update's output diffs as sent (Gradio's queue protocol, as
    gradio_client speaks it, without applying them)."""
    api = live_server.agent_url + "gradio_api"
    with httpx.Client(timeout=120) as http:
        config = http.get(live_server.agent_url + "config").json()
        fn_index = next(dep["id"] for dep in config["dependencies"]
                        if dep.get("api_name") == "agent_handler")
        session = uuid.uuid4().hex
        http.post(f"{api}/queue/join", json={
            "data": data, "fn_index": fn_index, "session_hash": session,
            "event_data": None, "trigger_id": None}).raise_for_status()
        sent: list[list[Any]] = []
        with http.stream("GET", f"{api}/queue/data",
                         params={"session_hash": session}) as response:
            for line in response.iter_lines():
                message = json.loads(line[5:]) if line.startswith("data:") else {}
                if message.get("msg") == "process_generating":
                    sent.append(message["output"]["data"])
                elif message.get("msg") == "process_completed":
                    break
    return sent


def test_the_events_go_out_as_appends(live_server: LiveServer) -> None:
    """Gradio's JSON postprocess made each update's events a value its diff replaced
    whole: a program received every event again with every word (4.2 MB for one "what can
    you do?" answer at 20 ms a token, against 0.56 MB as appends)."""
    user_id, token = live_server.token("viewer")
    sent = _raw_updates(live_server, ["what can you do?", None, "", user_id, token,
                                      "ss-dev", None])
    assert len(sent) >= 2  # the run's start, then at least its end
    first, *later = [update[1] for update in sent]
    assert isinstance(first, list) and first[0]["type"] == "run_started"
    edits = [edit for diff in later for edit in diff]
    assert edits and {edit[0] for edit in edits} == {"add"}, edits[:3]


def test_the_wire_form_is_gradios_own() -> None:
    """The chat as Gradio's own postprocess sends it; events, updates and skips as given,
    the events in a new list."""
    chatbot = gr.Chatbot(sanitize_html=True, render_markdown=False, latex_delimiters=[],
                         group_consecutive_messages=False)
    messages = [
        {"role": "user", "content": "list the dashboards"},
        {"role": "assistant", "content": "<p>calling</p>",
         "metadata": {"title": "🔧 list_dashboards", "id": "call_1", "status": "done"}},
        {"role": "assistant", "content": "<p>Found 13 dashboards</p>"},
    ]
    assert wire_form(chatbot)(messages) == chatbot.postprocess(messages).model_dump()
    events = [{"type": "run_started", "seq": 1}, {"type": "token", "text": "Hi", "seq": 2}]
    sent = wire_form(gr.JSON())(events)
    assert sent == gr.JSON().postprocess(events).model_dump() and sent is not events
    update = gr.update(visible=False)
    assert wire_form(chatbot)(update) is update
    assert wire_form(chatbot)(gr.update(value=messages, visible=True)) == gr.update(
        value=chatbot.postprocess(messages).model_dump(), visible=True)
    assert wire_form(gr.Button())(update) is update


def test_closing_the_stream_closes_the_handler_at_once() -> None:
    """A handler's `finally` (cancelling a run whose caller went away) runs when Gradio
    closes the wired stream, not later when the handler's generator is collected."""
    closed: list[str] = []

    async def handler(text: str) -> Any:
        try:
            yield [{"type": "run_started", "text": text}]
            yield [{"type": "done"}]
        finally:
            closed.append(text)

    async def first_then_close() -> list[str]:
        stream = wired(handler, [gr.JSON()])("hello")
        assert await anext(stream) == [{"type": "run_started", "text": "hello"}]
        await stream.aclose()
        return list(closed)

    assert asyncio.run(first_then_close()) == ["hello"]
