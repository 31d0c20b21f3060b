"""Outside demo mode, through a real app server (SQLite and PostgreSQL): sign-in over REST,
tokens on every Gradio and REST endpoint, and one error for unknown and foreign
conversations. Sign-in goes to the bundled demo Superset (AUTH_MODE=superset with no real
environment; users admin, alpha, gamma with their name as password)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from agent.tools.registry import select_tools
from storage import conversations as conv_repo
from tests.fakes.gradio_api import api_client
from tests.fakes.runs import all_rows
from tests.web.conftest import LiveServer

SERVER_SETTINGS = {"auth_mode": "superset"}
SENTINEL = "pw-sentinel-0b7c1e55aa"
# What a caller without a token may reach: the sign-in itself, and health.
OPEN_ROUTES = {"/api/health", "/api/health/live", "/api/login", "/api/refresh",
               "/api/demo/token"}


@pytest.fixture(scope="module")
def client(live_server: LiveServer) -> Client:
    return api_client(live_server.agent_url, download_files=False)


def _endpoints(client: Client) -> dict[str, list[str]]:
    """Every public Gradio endpoint and its parameter names."""
    info = client.view_api(return_format="dict", print_info=False)
    return {name: [p["parameter_name"] for p in spec["parameters"]]
            for name, spec in info["named_endpoints"].items()}


def _args(names: list[str], **values: Any) -> list[Any]:
    defaults = {"message": "hi", "history": None, "env_id": "ss-dev", "uicontext_str": None,
                "decision": "approve", "question": "why?", "before": None}
    return [values.get(name, defaults.get(name, "x")) for name in names]


def _rest_routes(live_server: LiveServer) -> list[tuple[str, str]]:
    """Every documented REST operation under /api (the OpenAPI schema is the contract)."""
    schema = httpx.get(f"{live_server.url}/openapi.json", timeout=30).json()
    return [(method.upper(), path) for path, operations in schema["paths"].items()
            if path.startswith("/api/") and path not in OPEN_ROUTES
            for method in operations]


def _call(url: str, method: str, path: str, **headers: str) -> httpx.Response:
    filled = path.replace("{conv_id}", "nobody-conv").replace("{request_id}", "nobody-req")
    body = {"question": "why?"} if method == "POST" else None
    return httpx.request(method, url + filled, json=body, headers=headers, timeout=30)


def test_a_wrong_credential_is_one_401_and_writes_nothing(live_server: LiveServer) -> None:
    # First in the module: no earlier turn is still saving its snapshot in the background.
    before = all_rows(live_server.runtime.db)
    answers = [httpx.post(f"{live_server.url}/api/login", json=body, timeout=30)
               for body in ({"username": "alpha", "password": SENTINEL},
                            {"username": f"nobody-{uuid.uuid4().hex[:6]}", "password": "x"})]

    assert {a.status_code for a in answers} == {401}
    assert len({a.text for a in answers}) == 1
    assert answers[0].json() == {"detail": "Wrong username or password."}
    assert answers[0].headers["x-error-code"] == "bad_credentials"
    after = all_rows(live_server.runtime.db)
    changed = {table for table in after if after[table] != before.get(table)}
    assert changed <= {"login_failures"}  # only the hashed failure count
    assert SENTINEL not in repr(after) and SENTINEL not in answers[0].text


def test_login_gives_the_persons_superset_tokens_and_roles(
    live_server: LiveServer, client: Client,
) -> None:
    registry = live_server.runtime.registry
    expected = {role: {s.name for s in select_tools(registry, role=role, object_type=None)}
                for role in ("admin", "editor", "viewer")}
    for username, role in (("admin", "admin"), ("alpha", "editor"), ("gamma", "viewer")):
        response = httpx.post(f"{live_server.url}/api/login", timeout=30,
                              json={"username": username, "password": username})
        assert response.status_code == 200 and response.headers["cache-control"] == "no-store"
        body = response.json()
        assert body["user_id"] == username and body["roles"] == [role]
        assert body["refresh_token"] and body["expires_at"] > time.time() + 60
        me = httpx.get(f"{live_server.url}/api/me", timeout=30,
                       headers={"Authorization": f"Bearer {body['user_jwt']}"}).json()
        assert me == {"user_id": username, "name": body["name"], "roles": [role],
                      "auth_mode": "superset"}
        _, events = client.predict("what can you do?", None, "", username, body["user_jwt"],
                                   "ss-dev", api_name="/agent_handler")
        assert set(events[0]["tools"]) == expected[role]
    assert len(expected["admin"]) == 23 and len(expected["viewer"]) < len(expected["editor"])


def test_five_failures_then_429_with_retry_after(live_server: LiveServer) -> None:
    name = f"guesser-{uuid.uuid4().hex[:6]}"
    codes = [httpx.post(f"{live_server.url}/api/login", timeout=30,
                        json={"username": name, "password": f"guess-{i}"}).status_code
             for i in range(6)]

    assert codes == [401] * 5 + [429]
    locked = httpx.post(f"{live_server.url}/api/login", timeout=30,
                        json={"username": name, "password": "x"})
    assert locked.status_code == 429 and 1 <= int(locked.headers["retry-after"]) <= 60


@pytest.mark.parametrize(("content", "status"), [
    (b"not json", 400), (b'["alpha", "alpha"]', 400), (b'{"username": "alpha"}', 400),
    (json.dumps({"username": "alpha", "password": SENTINEL * 20}).encode(), 400),
    (json.dumps({"username": "alpha", "password": SENTINEL * 500}).encode(), 413)],
    ids=["not-json", "array", "no-password", "long-password", "huge-body"])
def test_malformed_login_bodies_get_clear_errors_without_echo(
    live_server: LiveServer, content: bytes, status: int,
) -> None:
    response = httpx.post(f"{live_server.url}/api/login", content=content, timeout=30,
                          headers={"Content-Type": "application/json"})
    assert response.status_code == status and SENTINEL not in response.text


def test_refresh_renews_and_an_ended_session_is_401(live_server: LiveServer) -> None:
    signed = live_server.login("alpha")
    renewed = httpx.post(f"{live_server.url}/api/refresh", timeout=30,
                         json={"refresh_token": signed["refresh_token"]})
    assert renewed.status_code == 200
    assert renewed.json()["user_id"] == "alpha"
    assert renewed.json()["user_jwt"] != signed["user_jwt"]
    ended = httpx.post(f"{live_server.url}/api/refresh", json={"refresh_token": "garbage"},
                       timeout=30)
    assert ended.status_code == 401 and ended.headers["x-error-code"] == "token_expired"


def test_there_are_no_demo_tokens_and_every_rest_route_needs_a_token(
    live_server: LiveServer,
) -> None:
    assert httpx.post(f"{live_server.url}/api/demo/token", json={"user": "admin"},
                      timeout=30).status_code == 404
    routes = _rest_routes(live_server)
    assert len(routes) >= 7
    for method, path in routes:
        for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Bearer x.y.z"}):
            response = _call(live_server.url, method, path, **headers)
            assert response.status_code == 401, (method, path, headers, response.text)


def test_every_gradio_endpoint_refuses_an_empty_token(live_server: LiveServer,
                                                      client: Client) -> None:
    endpoints = _endpoints(client)
    assert {"/agent_handler", "/confirm_tool", "/retry_tool", "/side_question_submit",
            "/side_question_history", "/side_question_cancel",
            "/side_question_clear"} <= set(endpoints)
    before = all_rows(live_server.runtime.db)
    for name, params in endpoints.items():
        for user_id in ("", "admin"):
            with pytest.raises(AppError) as caught:
                client.predict(*_args(params, user_id=user_id, user_jwt=""), api_name=name)
            assert caught.value.title == "401 unauthorized", name
    assert all_rows(live_server.runtime.db) == before


def test_unknown_and_foreign_conversations_get_the_same_error_everywhere(
    live_server: LiveServer, client: Client,
) -> None:
    with live_server.runtime.db.session() as session:
        conv_repo.create_conversation(session=session, owner_id="admin",
                                      conversation_id="admins-conv")
    gamma = live_server.login("gamma")["user_jwt"]
    endpoints = _endpoints(client)
    for name, params in endpoints.items():
        if name == "/agent_handler":
            continue  # an unknown id there starts a new conversation (SPEC §2)
        seen = []
        for conv in ("admins-conv", "never-made-conv"):
            with pytest.raises(AppError) as caught:
                client.predict(*_args(params, conv_id=conv, user_id="gamma", user_jwt=gamma,
                                      request_id="nobody-req", confirmation_id="c",
                                      call_id="c"), api_name=name)
            seen.append((caught.value.title, str(caught.value)))
        assert seen[0] == seen[1], name
    with pytest.raises(AppError, match=r"^Conversation not found\.$"):
        client.predict("hi", None, "admins-conv", "gamma", gamma, "ss-dev",
                       api_name="/agent_handler")
    base = f"{live_server.url}/api/conversations"
    bodies = [httpx.get(f"{base}/{conv}/side-questions", timeout=30,
                        headers={"Authorization": f"Bearer {gamma}"})
              for conv in ("admins-conv", "never-made-conv")]
    assert [b.status_code for b in bodies] == [404, 404] and bodies[0].text == bodies[1].text
