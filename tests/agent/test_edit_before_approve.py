"""Edit before approve (issue 15, phase 3): the person changes a proposed call's arguments
when approving it; the edit is validated against the tool's schema (a bad value is refused
with the field's message and nothing runs), re-checked and re-rated (an edit that makes it
dangerous asks again, with the countdown), audited with both the proposed and the approved
arguments, and the model is told what really ran. Real demo Superset, SQLite and
PostgreSQL."""

from __future__ import annotations

import json

import pytest

from agent.data_blocks import unwrap_data
from agent.errors import InputError
from runtime import Runtime
from tests.agent.guardrails_support import dashboard, user
from tests.agent.undo_support import audit_rows, propose
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import collect, of_type


async def _approve(rt: Runtime, confirmation_id: str, args: object,
                   decision: str = "approve") -> list[dict]:
    identity, token = user(rt, "admin")
    live = await rt.agent.confirm(conv_id="conv-g", user_id=identity.user_id, user_jwt=token,
                                  confirmation_id=confirmation_id, decision=decision,
                                  args=args)
    return await collect(live)


async def test_an_edited_rename_runs_with_the_edited_title(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    card = await propose(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    server.reply_text("Renamed.")
    events = await _approve(rt, card["confirmation_id"],
                            json.dumps({"dashboard_id": 1, "title": "Executive Board"}))
    (result,) = of_type(events, "tool_result")
    assert dashboard(rt, "ss-dev", 1)["dashboard_title"] == "Executive Board"  # type: ignore[index]
    (approved,) = [r for r in audit_rows(rt) if r.action == "approved"]
    assert approved.args == {"proposed": {"dashboard_id": 1, "title": "Exec"},
                             "approved": {"dashboard_id": 1, "title": "Executive Board"}}
    assert approved.outcome.startswith("approved with edited arguments by ")
    executed = [r for r in audit_rows(rt) if r.action in ("executing", "executed")]
    assert all(r.args == {"dashboard_id": 1, "title": "Executive Board"} for r in executed)
    told = unwrap_data(server.requests[-1].messages[-1]["content"])
    assert told.startswith('The person edited this call before approving it, so it ran with '
                           '{"dashboard_id": 1, "title": "Executive Board"} instead of the '
                           'proposed {"dashboard_id": 1, "title": "Exec"}.')
    assert result["call_id"] == card["call_id"]


async def test_an_invalid_edit_is_refused_with_the_fields_message_and_nothing_runs(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    card = await propose(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    with pytest.raises(InputError, match="title: String should have at least 1 character"):
        await _approve(rt, card["confirmation_id"], {"dashboard_id": 1, "title": ""})
    with pytest.raises(InputError, match="args must be a JSON object"):
        await _approve(rt, card["confirmation_id"], "not json")
    assert dashboard(rt, "ss-dev", 1)["dashboard_title"] == "Executive Summary"  # type: ignore[index]
    assert [r.action for r in audit_rows(rt)] == []  # nothing decided, nothing ran
    server.reply_text("Renamed.")
    events = await _approve(rt, card["confirmation_id"], None)  # still open: plain approval
    assert of_type(events, "tool_result")
    assert dashboard(rt, "ss-dev", 1)["dashboard_title"] == "Exec"  # type: ignore[index]


async def test_an_edit_that_retargets_prod_asks_again_with_the_countdown(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    card = await propose(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    assert (card["dangerous"], card["countdown_s"]) == (False, 0)
    edited = {"dashboard_id": 1, "title": "Exec", "env_id": "prod"}
    events = await _approve(rt, card["confirmation_id"], edited)
    (again,) = of_type(events, "confirm_required")
    assert (again["dangerous"], again["countdown_s"], again["env_id"]) == (True, 10, "prod")
    assert again["args"] == edited and again["call_id"] == card["call_id"]
    assert events[-1]["status"] == "awaiting_confirmation" and not of_type(events, "tool_result")
    assert dashboard(rt, "prod", 1)["dashboard_title"] == "Executive Summary"  # type: ignore[index]

    server.reply_text("Renamed in prod.")
    done = await _approve(rt, again["confirmation_id"], None)
    assert of_type(done, "tool_result")
    assert dashboard(rt, "prod", 1)["dashboard_title"] == "Exec"  # type: ignore[index]
    assert dashboard(rt, "ss-dev", 1)["dashboard_title"] == "Executive Summary"  # type: ignore[index]
    told = unwrap_data(server.requests[-1].messages[-1]["content"])
    assert told.startswith("The person edited this call before approving it")


async def test_a_deny_ignores_an_edit(rt: Runtime, server: ScriptedOpenAIServer) -> None:
    card = await propose(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    server.reply_text("OK.")
    events = await _approve(rt, card["confirmation_id"], {"title": ""}, decision="deny")
    assert of_type(events, "tool_error")[0]["decision"] == "denied"
