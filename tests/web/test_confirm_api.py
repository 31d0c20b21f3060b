"""`/confirm_tool`, `/retry_tool` and `GET /api/audit` through gradio_client and HTTP against a
real app server (offline model, demo Superset) on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer


@pytest.fixture(scope="module")
def client(live_server: LiveServer) -> Client:
    return api_client(live_server.agent_url, download_files=False)


def _of(events: list[dict], kind: str) -> list[dict]:
    return [event for event in events if event["type"] == kind]


def _context(pk: int, env: str = "prod") -> str:
    return json.dumps({"objectType": "dashboard", "objectId": pk, "envId": env})


def _ask_delete(client: Client, live_server: LiveServer, pk: int) -> tuple[str, dict, tuple]:
    user_id, token = live_server.token("admin")
    conv_id = uuid.uuid4().hex
    _, events = client.predict(f"delete dashboard {pk}", None, conv_id, user_id, token, "prod",
                               _context(pk), api_name="/agent_handler")
    assert events[-1]["status"] == "awaiting_confirmation"
    (card,) = _of(events, "confirm_required")
    return conv_id, card, (user_id, token)


def _exists(live_server: LiveServer, env: str, pk: int) -> bool:
    return live_server.runtime.demo_superset.store.get(env, "dashboard", pk) is not None


def test_the_endpoints_are_public(client: Client) -> None:
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert {"/agent_handler", "/confirm_tool", "/retry_tool"} <= set(endpoints)
    assert len(endpoints["/confirm_tool"]["parameters"]) == 6  # the last, args, optional
    assert endpoints["/confirm_tool"]["parameters"][5]["parameter_has_default"] is True
    assert len(endpoints["/retry_tool"]["parameters"]) == 4


def test_approve_streams_the_continuation_and_runs_once(client: Client,
                                                        live_server: LiveServer) -> None:
    conv_id, card, (user_id, token) = _ask_delete(client, live_server, 5)
    assert card["dangerous"] is True and card["countdown_s"] == 10
    assert card["summary"].startswith("Delete dashboard #5 'Regional Sales' in prod")

    job = client.submit(conv_id, user_id, token, card["confirmation_id"], "approve",
                        api_name="/confirm_tool")
    chat, events = job.result(timeout=120)
    assert len(job.outputs()) >= 2  # streamed, not one final answer only

    assert events[0]["type"] == "run_started" and events[-1]["status"] == "completed"
    assert _of(events, "tool_result")[0]["call_id"] == card["call_id"]
    assert not _exists(live_server, "prod", 5)
    titles = [m.get("metadata", {}).get("title", "") for m in chat if m.get("metadata")]
    assert sum("delete_dashboard" in t for t in titles) == 1  # the paused step, shown once
    with pytest.raises(AppError, match="already approved"):
        client.predict(conv_id, user_id, token, card["confirmation_id"], "approve",
                       api_name="/confirm_tool")


def test_deny_runs_nothing_and_other_users_are_refused(client: Client,
                                                       live_server: LiveServer) -> None:
    conv_id, card, (user_id, token) = _ask_delete(client, live_server, 6)
    viewer_id, viewer_token = live_server.token("viewer")
    with pytest.raises(AppError):
        client.predict(conv_id, viewer_id, viewer_token, card["confirmation_id"], "approve",
                       api_name="/confirm_tool")

    _, events = client.predict(conv_id, user_id, token, card["confirmation_id"], "deny",
                               api_name="/confirm_tool")

    assert not _of(events, "tool_result") and events[-1]["status"] == "completed"
    assert "declined" in _of(events, "message")[0]["content"].lower()
    assert _exists(live_server, "prod", 6)
    with pytest.raises(AppError, match="already denied"):
        client.predict(conv_id, user_id, token, card["confirmation_id"], "approve",
                       api_name="/confirm_tool")


def test_manual_retry_after_the_automatic_retry_failed(client: Client,
                                                       live_server: LiveServer) -> None:
    demo = live_server.runtime.demo_superset
    user_id, token = live_server.token("viewer")
    conv_id = uuid.uuid4().hex
    demo.set_faults("ss-dev", {"status": 502, "count": 2, "methods": ["GET"]})
    try:
        _, events = client.predict("show dashboard 1", None, conv_id, user_id, token, "ss-dev",
                                   _context(1, "ss-dev"), api_name="/agent_handler")
    finally:
        demo.set_faults("ss-dev", None)
    assert [e["attempt"] for e in _of(events, "tool_retry")] == [1]
    (error,) = _of(events, "tool_error")
    assert error["retry_exhausted"] is True and error["retryable"] is True

    _, retried = client.predict(conv_id, user_id, token, error["call_id"],
                                api_name="/retry_tool")

    assert _of(retried, "tool_result") and retried[-1]["status"] == "completed"
    assert "Executive Summary" in _of(retried, "tool_result")[0]["summary"]


def test_audit_route_is_for_admins_with_a_bearer_token(client: Client,
                                                       live_server: LiveServer) -> None:
    conv_id, card, (user_id, token) = _ask_delete(client, live_server, 4)
    client.predict(conv_id, user_id, token, card["confirmation_id"], "approve",
                   api_name="/confirm_tool")
    url = f"{live_server.url}/api/audit"

    body = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10).json()

    mine = [e for e in body["entries"] if e["confirmation_id"] == card["confirmation_id"]]
    assert [e["action"] for e in mine] == ["executed", "executing", "approved"]  # newest first
    assert mine[0]["outcome"] == "succeeded" and mine[0]["env_id"] == "prod"
    _, viewer_token = live_server.token("viewer")
    assert httpx.get(url, headers={"Authorization": f"Bearer {viewer_token}"},
                     timeout=10).status_code == 403
    assert httpx.get(url, timeout=10).status_code == 401
    assert httpx.delete(url, headers={"Authorization": f"Bearer {token}"},
                        timeout=10).status_code == 405
