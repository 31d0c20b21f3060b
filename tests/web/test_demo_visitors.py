"""Public demo safety (issue 10, item 6): every visit is its own demo identity, so two people
who both pick "editor" never share conversations, and an admin visitor's audit panel lists
only their own entries. Against a real app server through gradio_client and HTTP."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from agent.identity.demo import visitor_of
from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer

NOT_FOUND = r"^Conversation not found\.$"


@pytest.fixture(scope="module")
def client(live_server: LiveServer) -> Client:
    return api_client(live_server.agent_url, download_files=False)


def _rename(client: Client, user: tuple[str, str]) -> tuple[str, dict]:
    """`user` proposes a rename on dashboard 3 in ss-dev; the run waits for approval."""
    conv_id = uuid.uuid4().hex
    context = json.dumps({"objectType": "dashboard", "objectId": 3, "envId": "ss-dev"})
    _, events = client.predict('rename it to "Mine"', None, conv_id, *user, "ss-dev", context,
                               api_name="/agent_handler")
    assert events[-1]["status"] == "awaiting_confirmation", events[-1]
    card = next(e for e in events if e["type"] == "confirm_required")
    return conv_id, card


def test_each_demo_token_is_its_own_visitor(live_server: LiveServer) -> None:
    first, second = live_server.token("editor"), live_server.token("editor")
    assert first[0] != second[0]
    assert all(user.startswith("demo-editor-") and visitor_of(user) for user, _ in
               (first, second))


def test_two_editors_cannot_see_or_act_on_each_other(client: Client,
                                                     live_server: LiveServer) -> None:
    alice, bob = live_server.token("editor"), live_server.token("editor")
    conv_id, card = _rename(client, alice)

    with pytest.raises(AppError, match=NOT_FOUND):  # continue the conversation
        client.predict("show it", None, conv_id, *bob, "ss-dev", api_name="/agent_handler")
    with pytest.raises(AppError, match=NOT_FOUND):  # approve the pending change
        client.predict(conv_id, *bob, card["confirmation_id"], "approve",
                       api_name="/confirm_tool")
    side = httpx.post(f"{live_server.url}/api/conversations/{conv_id}/side-questions",
                      json={"question": "what is it doing?"},
                      headers={"Authorization": f"Bearer {bob[1]}"}, timeout=30)
    assert side.status_code == 404

    # Alice's change is still hers to decide, and it is intact.
    _, events = client.predict(conv_id, *alice, card["confirmation_id"], "deny",
                               api_name="/confirm_tool")
    assert events[-1]["status"] == "completed"


def test_the_demo_audit_panel_shows_only_the_visitors_own_entries(
        client: Client, live_server: LiveServer) -> None:
    alice, bob = live_server.token("admin"), live_server.token("admin")
    conv_id, card = _rename(client, alice)
    client.predict(conv_id, *alice, card["confirmation_id"], "deny", api_name="/confirm_tool")

    def entries(user: tuple[str, str]) -> list[dict]:
        response = httpx.get(f"{live_server.url}/api/audit", timeout=30,
                             headers={"Authorization": f"Bearer {user[1]}"})
        assert response.status_code == 200, response.text
        return response.json()["entries"]

    assert [e["confirmation_id"] for e in entries(alice)] == [card["confirmation_id"]]
    assert entries(bob) == []
