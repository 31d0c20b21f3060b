"""Undo against real Apache Superset 6.1.0 (issue 15): the offline model renames and then
deletes a throwaway dashboard after approval; each change kept its pre-image (a real
export), and each undo, approved on its own card, puts it back: the title by GET, the
deleted dashboard by its uuid."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime import Runtime
from tests.fakes.runs import collect, of_type
from tests.real_superset.test_tools_real import _turn, _user, dev, real_rt  # noqa: F401
from tests.real_superset.tools_support import AdminRest, unique

pytestmark = pytest.mark.real_superset


async def _approve(rt: Runtime, role: str, conv_id: str, card: dict[str, Any]
                   ) -> list[dict[str, Any]]:
    user_id, token = await _user(rt, role)
    return await collect(await rt.agent.confirm(
        conv_id=conv_id, user_id=user_id, user_jwt=token,
        confirmation_id=card["confirmation_id"], decision="approve"))


async def _undo(rt: Runtime, role: str, conv_id: str, audit_id: int) -> list[dict[str, Any]]:
    user_id, token = await _user(rt, role)
    asked = await collect(await rt.agent.undo_change(
        conv_id=conv_id, user_id=user_id, user_jwt=token, audit_id=audit_id))
    [card] = of_type(asked, "confirm_required")
    assert card["tool"] == "undo_change" and asked[-1]["status"] == "awaiting_confirmation"
    return [card, *await _approve(rt, role, conv_id, card)]


async def _by_uuid(rest: AdminRest, uuid: str) -> dict[str, Any] | None:
    q = "(columns:!(id,uuid,dashboard_title),page_size:100)"
    rows = (await rest.http.get("/api/v1/dashboard/", params={"q": q})).json()["result"]
    return next((row for row in rows if row.get("uuid") == uuid), None)


async def test_undo_a_rename_and_a_delete_on_real_superset(
    real_rt: Runtime, dev: AdminRest  # noqa: F811
) -> None:
    title = unique("Undo me")
    dash_id, _ = await dev.dashboard_with_chart(title, (await dev.sales_dataset())["id"])
    uuid = (await dev.get("dashboard", dash_id) or {})["uuid"]

    new_title = unique("Renamed then undone")
    events = await _turn(real_rt, f'rename it to "{new_title}"', role="editor",
                         dashboard_id=dash_id, conv_id="real-undo-rename")
    [card] = of_type(events, "confirm_required")
    [result] = of_type(await _approve(real_rt, "editor", "real-undo-rename", card),
                       "tool_result")
    assert (await dev.get("dashboard", dash_id) or {})["dashboard_title"] == new_title
    undo = await _undo(real_rt, "editor", "real-undo-rename", result["undo_audit_id"])
    assert undo[0]["changes"] == [{"field": "title", "before": new_title, "after": title}]
    assert of_type(undo, "tool_result")
    assert (await dev.get("dashboard", dash_id) or {})["dashboard_title"] == title

    events = await _turn(real_rt, "delete this dashboard", role="admin",
                         dashboard_id=dash_id, conv_id="real-undo-delete")
    [card] = of_type(events, "confirm_required")
    assert card["tool"] == "delete_dashboard" and card["impact"]
    [result] = of_type(await _approve(real_rt, "admin", "real-undo-delete", card),
                       "tool_result")
    assert await dev.get("dashboard", dash_id) is None
    undo = await _undo(real_rt, "admin", "real-undo-delete", result["undo_audit_id"])
    assert "Restore the deleted dashboard" in undo[0]["summary"]
    [restored] = of_type(undo, "tool_result")
    assert json.loads(restored["summary"])["exists"] is True
    back = await _by_uuid(dev, uuid)
    assert back is not None and back["dashboard_title"] == title
    dev.adopt("dashboard", back["id"])  # the restored copy goes at the end too
