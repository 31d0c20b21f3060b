"""The agent loop with the offline model, settings pointing at the real instances: "list the
dashboards" answers from real Superset, and a rename lands only after approval."""

from __future__ import annotations

import json

import pytest

from agent.offline.intents import CHAT_PAGE_SIZE
from runtime import Runtime
from tests.fakes.runs import collect, of_type
from tests.real_superset.agent_support import sign_in_as, turn_on_dashboard
from tests.real_superset.tools_support import SALES_DASHBOARD_SLUG, AdminRest, unique

real = pytest.mark.real_superset


@real
async def test_list_the_dashboards_works_against_the_real_superset(
    real_rt: Runtime, dev: AdminRest
) -> None:
    sales = await dev.get("dashboard", SALES_DASHBOARD_SLUG) or {}
    events = await turn_on_dashboard(real_rt, "list the dashboards", role="viewer",
                         dashboard_id=sales["id"], conv_id="real-list")

    assert real_rt.demo_superset is None
    assert "list_dashboards" in events[0]["tools"]
    [call] = of_type(events, "tool_call")
    assert (call["tool"], call["args"]) == ("list_dashboards", {"page_size": CHAT_PAGE_SIZE})
    [result] = of_type(events, "tool_result")
    count = await dev.count("dashboard")
    assert json.loads(result["summary"])["count"] == count
    assert str(count) in of_type(events, "message")[-1]["content"]
    assert events[-1]["status"] == "completed"


@real
async def test_rename_after_approval_writes_to_the_real_superset(
    real_rt: Runtime, dev: AdminRest
) -> None:
    title = unique("Agent rename")
    dash_id, _ = await dev.dashboard_with_chart(title, (await dev.sales_dataset())["id"])
    new_title = unique("Renamed by the agent")
    events = await turn_on_dashboard(real_rt, f'rename it to "{new_title}"', role="editor",
                         dashboard_id=dash_id, conv_id="real-rename")

    [card] = of_type(events, "confirm_required")
    assert (card["tool"], card["args"], card["env_id"], card["dangerous"]) == (
        "update_dashboard", {"dashboard_id": dash_id, "title": new_title}, "dev", False)
    assert title in card["summary"], "the summary names the dashboard as Superset has it"
    assert events[-1]["status"] == "awaiting_confirmation"
    assert (await dev.get("dashboard", dash_id) or {})["dashboard_title"] == title

    user_id, token = await sign_in_as(real_rt, "editor")
    resumed = await collect(await real_rt.agent.confirm(
        conv_id="real-rename", user_id=user_id, user_jwt=token,
        confirmation_id=card["confirmation_id"], decision="approve"))
    [result] = of_type(resumed, "tool_result")
    assert json.loads(result["summary"])["updated"] == dash_id
    assert resumed[-1]["status"] == "completed"
    assert (await dev.get("dashboard", dash_id) or {})["dashboard_title"] == new_title
