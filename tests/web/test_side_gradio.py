"""The side-question Gradio API through gradio_client against a real app server (SQLite and
PostgreSQL): submit, idempotent repeat, history paging, cancel, clear, and errors."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer
from tests.web.side_support import LONG_SIDE, SHORT_SIDE, clone_parent, run_main_turn, seed_history

SERVER_SETTINGS = {"offline_token_delay_ms": 60}
ENDPOINTS = ("/side_question_submit", "/side_question_history", "/side_question_cancel",
             "/side_question_clear")


@dataclass
class Api:
    server: LiveServer
    client: Client
    main: str
    viewer: tuple[str, str]
    editor: tuple[str, str]

    def parent(self, **kwargs: Any) -> str:
        return clone_parent(self.server, self.main, self.viewer[0], **kwargs)

    def call(self, endpoint: str, conv_id: str, *args: Any,
             who: tuple[str, str] | None = None) -> dict[str, Any]:
        user_id, token = who or self.viewer
        return self.client.predict(conv_id, user_id, token, *args,
                                   api_name=f"/side_question_{endpoint}")

    def wait_terminal(self, conv_id: str, request_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            page = self.call("history", conv_id, None)
            item = next(i for i in page["items"] if i["id"] == request_id)
            if item["status"] != "running":
                return item
            time.sleep(0.2)
        raise AssertionError("the side question did not finish")


@pytest.fixture(scope="module")
def api(live_server: LiveServer) -> Iterator[Api]:
    viewer = live_server.token("viewer")
    editor = live_server.token("editor")
    run_main_turn(live_server, "gr-main", *viewer)
    client = api_client(live_server.agent_url)
    try:
        yield Api(live_server, client, "gr-main", viewer, editor)
    finally:
        client.close()


def test_endpoints_are_public_with_real_inputs(api: Api) -> None:
    info = api.client.view_api(print_info=False, return_format="dict")
    named = info["named_endpoints"]
    for endpoint in ENDPOINTS:
        assert endpoint in named, endpoint
    labels = [p["label"] for p in named["/side_question_submit"]["parameters"]]
    assert labels[-2:] == ["question", "client_request_id"] and len(labels) == 5
    assert len(named["/side_question_history"]["parameters"]) == 4
    assert len(named["/side_question_cancel"]["parameters"]) == 4
    assert len(named["/side_question_clear"]["parameters"]) == 3


def test_submit_repeat_history_and_finish(api: Api) -> None:
    parent = api.parent()
    created = api.call("submit", parent, SHORT_SIDE, "g-1")
    assert created["question"] == SHORT_SIDE and created["ordinal"] == 1
    assert set(created) >= {"id", "answer", "status", "sequence", "snapshot_at", "model"}
    again = api.call("submit", parent, SHORT_SIDE, "g-1")
    assert again["id"] == created["id"]
    final = api.wait_terminal(parent, created["id"])
    assert final["status"] == "completed" and "show_capabilities" in final["answer"]
    assert api.call("submit", parent, SHORT_SIDE, "g-1") == final  # the same object
    page = api.call("history", parent, None)
    assert set(page) == {"items", "running", "snapshot", "next_cursor"}
    assert page["snapshot"]["model"] == api.server.runtime.settings.agent_model
    with pytest.raises(AppError, match="already used with another question"):
        api.call("submit", parent, "a different question", "g-1")


def test_cancel_then_clear(api: Api) -> None:
    parent = api.parent()
    running = api.call("submit", parent, LONG_SIDE, "")
    assert running["status"] == "running"
    with pytest.raises(AppError, match="already running"):
        api.call("submit", parent, SHORT_SIDE, "")
    cancelled = api.call("cancel", parent, running["id"])
    assert cancelled["id"] == running["id"] and cancelled["status"] == "cancelled"
    assert api.call("history", parent, None)["running"] is None
    cleared = api.call("clear", parent)
    assert cleared["items"] == [] and cleared["snapshot"] is not None


def test_history_paging(api: Api) -> None:
    parent = api.parent()
    seed_history(api.server, parent, 45)
    sizes, ordinals, before = [], [], None
    while True:
        page = api.call("history", parent, before)
        sizes.append(len(page["items"]))
        ordinals += [item["ordinal"] for item in page["items"]]
        before = page["next_cursor"]
        if not before:
            break
    assert sizes == [20, 20, 5] and ordinals == list(range(45, 0, -1))


def test_errors(api: Api) -> None:
    parent = api.parent()
    assert api.call("history", parent, None)["items"] == []
    for conv_id in (parent, "no-such-conversation", "bad id\x00"):
        for endpoint, args in (("submit", (SHORT_SIDE, "")), ("history", (None,)),
                               ("clear", ())):
            with pytest.raises(AppError, match="Conversation not found"):
                api.call(endpoint, conv_id, *args, who=api.editor)
    with pytest.raises(AppError, match="token is not valid"):
        api.call("history", parent, None, who=(api.viewer[0], "forged"))
    with pytest.raises(AppError, match="run the main agent first"):
        api.call("submit", api.parent(snapshot=False), SHORT_SIDE, "")
    with pytest.raises(AppError, match="limit is 4,000"):
        api.call("submit", parent, "x" * 4001, "")
    with pytest.raises(AppError, match="type a side question"):
        api.call("submit", parent, "   ", "")
    with pytest.raises(AppError, match="No such side question"):
        api.call("cancel", parent, "0" * 32)
    other = api.parent()
    foreign = api.call("submit", other, SHORT_SIDE, "")
    with pytest.raises(AppError, match="No such side question"):
        api.call("cancel", parent, foreign["id"])  # a request of another conversation
    api.wait_terminal(other, foreign["id"])


def test_nul_characters_are_dropped(api: Api) -> None:
    parent = api.parent()
    created = api.call("submit", parent, "which\x00 tools did you use?", "")
    assert created["question"] == "which tools did you use?"
    api.wait_terminal(parent, created["id"])
