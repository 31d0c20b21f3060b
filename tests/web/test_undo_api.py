"""`/undo_change` (issue 15) through gradio_client against a real app server (offline model,
demo Superset) on SQLite and PostgreSQL: a deleted dashboard comes back, with its uuid,
after the undo's own approval; the audit log offers the undo, then says who did it."""

from __future__ import annotations

import json
import uuid

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from storage.pre_images import undo_states
from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer


@pytest.fixture(scope="module")
def client(live_server: LiveServer) -> Client:
    return api_client(live_server.agent_url, download_files=False)


def _of(events: list[dict], kind: str) -> list[dict]:
    return [event for event in events if event["type"] == kind]


def test_the_endpoint_is_public(client: Client) -> None:
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert len(endpoints["/undo_change"]["parameters"]) == 4


def test_undo_a_delete_through_the_api(client: Client, live_server: LiveServer) -> None:
    store = live_server.runtime.demo_superset.store
    before = store.get("prod", "dashboard", 7)
    assert before is not None
    user_id, token = live_server.token("admin")
    conv_id = uuid.uuid4().hex
    context = json.dumps({"objectType": "dashboard", "objectId": 7, "envId": "prod"})
    _, events = client.predict("delete dashboard 7", None, conv_id, user_id, token, "prod",
                               context, api_name="/agent_handler")
    (card,) = _of(events, "confirm_required")
    _, events = client.predict(conv_id, user_id, token, card["confirmation_id"], "approve",
                               api_name="/confirm_tool")
    (result,) = _of(events, "tool_result")
    audit_id = result["undo_audit_id"]
    assert isinstance(audit_id, int)
    assert store.by_uuid("prod", "dashboard", before["uuid"]) is None

    _, events = client.predict(conv_id, user_id, token, str(audit_id),
                               api_name="/undo_change")
    assert events[-1]["status"] == "awaiting_confirmation"
    (undo,) = _of(events, "confirm_required")
    assert undo["tool"] == "undo_change" and undo["dangerous"] is True
    assert "Restore the deleted dashboard 'Support Operations' in prod" in undo["summary"]
    assert store.by_uuid("prod", "dashboard", before["uuid"]) is None  # not before approval
    _, events = client.predict(conv_id, user_id, token, undo["confirmation_id"], "approve",
                               api_name="/confirm_tool")
    assert _of(events, "tool_result")
    back = store.by_uuid("prod", "dashboard", before["uuid"])
    assert back is not None and back["dashboard_title"] == before["dashboard_title"]

    with live_server.runtime.db.session() as session:  # what the audit panel shows
        state = undo_states(session=session, audit_ids=[audit_id])
    assert state[audit_id].startswith("undone by #")
    with pytest.raises(AppError, match="already undone"):
        client.predict(conv_id, user_id, token, str(audit_id), api_name="/undo_change")


def test_confirm_tool_takes_edited_args(client: Client, live_server: LiveServer) -> None:
    store = live_server.runtime.demo_superset.store
    user_id, token = live_server.token("editor")
    conv_id = uuid.uuid4().hex
    context = json.dumps({"objectType": "dashboard", "objectId": 4, "envId": "ss-dev"})
    _, events = client.predict("rename dashboard 4 to 'Retention'", None, conv_id, user_id,
                               token, "ss-dev", context, api_name="/agent_handler")
    (card,) = _of(events, "confirm_required")
    assert card["args"]["title"] == "Retention"
    with pytest.raises(AppError, match="title: String should have at least 1 character"):
        client.predict(conv_id, user_id, token, card["confirmation_id"], "approve",
                       json.dumps({"dashboard_id": 4, "title": ""}), api_name="/confirm_tool")
    assert store.get("ss-dev", "dashboard", 4)["dashboard_title"] == "Customer Retention"
    _, events = client.predict(conv_id, user_id, token, card["confirmation_id"], "approve",
                               json.dumps({"dashboard_id": 4, "title": "Retention 2026"}),
                               api_name="/confirm_tool")
    assert _of(events, "tool_result")
    assert store.get("ss-dev", "dashboard", 4)["dashboard_title"] == "Retention 2026"
