"""The public Gradio API `/agent_handler` through gradio_client against a real app server."""

from __future__ import annotations

import json

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError
from sqlmodel import func, select

from storage.models import Message
from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer


@pytest.fixture(scope="module")
def client(live_server: LiveServer) -> Client:
    return api_client(live_server.agent_url, download_files=False)


def _types(events: list[dict]) -> list[str]:
    return [event["type"] for event in events]


def _text(message: dict) -> str:
    content = message["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def test_six_positional_arguments_complete(client: Client, live_server: LiveServer) -> None:
    user_id, token = live_server.token("viewer")
    chat, events = client.predict("what can you do?", None, "", user_id, token, "ss-dev",
                                  api_name="/agent_handler")
    assert events[0]["type"] == "run_started"
    assert events[-1]["type"] == "done" and events[-1]["status"] == "completed"
    assert events[0]["context"] is None  # the handler saw no UI context
    seqs = [event["seq"] for event in events]
    assert seqs == sorted(set(seqs))
    assert chat[0]["role"] == "user"


def test_seven_arguments_and_tool_step(client: Client, live_server: LiveServer) -> None:
    user_id, token = live_server.token("admin")
    context = json.dumps({"objectType": "dashboard", "objectId": 3, "objectName": "Sales",
                          "envId": "ss-dev", "route": "/dashboards/3"})
    chat, events = client.predict("what can you do?", None, "", user_id, token, "ss-dev",
                                  context, api_name="/agent_handler")
    assert events[0]["context"]["objectId"] == 3
    kinds = _types(events)
    assert "tool_call" in kinds and "tool_result" in kinds
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["tool"] == "show_capabilities"
    steps = [m for m in chat if (m.get("metadata") or {}).get("title", "").endswith(
        "show_capabilities")]
    assert steps and steps[0]["metadata"]["status"] == "done"
    assert events[-1]["status"] == "completed"


def test_keyword_arguments(client: Client, live_server: LiveServer) -> None:
    user_id, token = live_server.token("editor")
    _, events = client.predict(message="which environments are there?", history=None,
                               conv_id="", user_id=user_id, user_jwt=token, env_id="staging",
                               api_name="/agent_handler")
    assert events[0]["env_id"] == "staging" and events[0]["env_tier"] == "staging"
    assert events[-1]["status"] == "completed"


@pytest.mark.parametrize("raw", [
    "{not json",
    "[1, 2, 3]",
    json.dumps({"objectName": "x" * (64 * 1024)}),  # over 4 KB, under the body limit
    json.dumps({"objectType": 42, "objectId": "abc", "envId": ["prod"]}),
    json.dumps({"objectType": "rocket", "surprise": True}),
], ids=["not-json", "array", "oversize", "wrong-types", "unknown"])
def test_malformed_uicontext_warns_and_completes(client: Client, live_server: LiveServer,
                                                 raw: str) -> None:
    user_id, token = live_server.token("viewer")
    _, events = client.predict("what can you do?", None, "", user_id, token, "ss-dev", raw,
                               api_name="/agent_handler")
    assert "warning" in _types(events)
    assert events[-1]["status"] == "completed"


def test_html_name_is_text_in_the_transcript(client: Client, live_server: LiveServer) -> None:
    user_id, token = live_server.token("viewer")
    evil = "<img src=x onerror=alert(1)>"
    chat, events = client.predict(f"what can you do? {evil}", None, "", user_id, token,
                                  "ss-dev", json.dumps({"objectType": "dashboard",
                                                        "objectName": evil}),
                                  api_name="/agent_handler")
    assert events[0]["context"]["objectName"] == evil  # kept as data...
    assert "<img" not in _text(chat[0]) and "&lt;img" in _text(chat[0])  # ...shown as text


def test_foreign_conversation_is_refused_and_nothing_changes(
    client: Client, live_server: LiveServer
) -> None:
    owner, owner_token = live_server.token("editor")
    _, events = client.predict("what can you do?", None, "", owner, owner_token, "ss-dev",
                               api_name="/agent_handler")
    conv_id = events[0]["conv_id"]
    db = live_server.runtime.db

    def count() -> int:
        with db.session() as session:
            return session.exec(select(func.count()).select_from(Message).where(
                Message.conversation_id == conv_id)).one()

    before = count()
    intruder, intruder_token = live_server.token("viewer")
    with pytest.raises(AppError, match=r"^Conversation not found\.$"):
        client.predict("show me", None, conv_id, intruder, intruder_token, "ss-dev",
                       api_name="/agent_handler")
    assert count() == before


def test_token_subject_must_match_user_id(client: Client, live_server: LiveServer) -> None:
    _, admin_token = live_server.token("admin")
    with pytest.raises(AppError, match="subject"):
        client.predict("hi", None, "", "demo-viewer", admin_token, "ss-dev",
                       api_name="/agent_handler")


def test_forged_token_is_refused(client: Client) -> None:
    with pytest.raises(AppError, match="not valid"):
        client.predict("hi", None, "", "demo-admin", "eyJhbGciOiJIUzI1NiJ9.e30.c2ln", "ss-dev",
                       api_name="/agent_handler")


def test_next_turn_sees_history(client: Client, live_server: LiveServer) -> None:
    user_id, token = live_server.token("viewer")
    _, first = client.predict("what can you do?", None, "", user_id, token, "ss-dev",
                              api_name="/agent_handler")
    conv_id = first[0]["conv_id"]
    chat, second = client.predict("which environments are there?", None, conv_id, user_id,
                                  token, "ss-dev", api_name="/agent_handler")
    assert second[0]["conv_id"] == conv_id
    users = [_text(m) for m in chat if m["role"] == "user"]
    assert users == ["<p>what can you do?</p>", "<p>which environments are there?</p>"]


def test_rest_routes(live_server: LiveServer) -> None:
    health = httpx.get(f"{live_server.url}/api/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    redirect = httpx.get(f"{live_server.url}/", timeout=10)
    assert redirect.status_code in (302, 307) and redirect.headers["location"] == "/agent/"
    minted = httpx.post(f"{live_server.url}/api/demo/token", json={"user": "admin"}, timeout=10)
    assert minted.status_code == 200 and minted.json()["roles"] == ["admin"]
    bad = httpx.post(f"{live_server.url}/api/demo/token", json={"user": "root"}, timeout=10)
    assert bad.status_code == 422
    assert "user_jwt" not in httpx.get(f"{live_server.url}/api/health", timeout=10).text


def test_only_the_agent_endpoint_is_public(client: Client) -> None:
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert "/agent_handler" in endpoints
    assert not [name for name in endpoints if "load" in name or "lambda" in name]
