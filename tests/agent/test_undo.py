"""Undo (issue 15, phase 2): every audited change with a pre-image can be undone, through a
confirmation like any write, audited as an undo of its original; an undo after someone
else changed the object refuses, and restores when overwriting is confirmed. Checked by
GET against the demo Superset's REST API; storage on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agent.errors import ConversationAccessError, InputError
from runtime import Runtime
from tests.agent.guardrails_support import call, confirm, turn, user
from tests.agent.undo_support import (
    approved_write,
    ask_undo,
    audited_as_undo_of,
    executing_id,
    get_object,
    pre_image,
)
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import collect, of_type


async def _undo(rt: Runtime, server: ScriptedOpenAIServer, audit_id: int, *,
                overwrite_newer: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Ask for the undo, check it stopped at its card, approve it: (card, events)."""
    asked = await ask_undo(rt, audit_id, overwrite_newer=overwrite_newer)
    (card,) = of_type(asked, "confirm_required")
    assert card["tool"] == "undo_change" and card["args"]["audit_id"] == audit_id
    assert asked[-1]["status"] == "awaiting_confirmation"
    server.reply_text("Restored.")
    return card, await confirm(rt, card["confirmation_id"])


async def test_undo_a_title_update(rt: Runtime, server: ScriptedOpenAIServer) -> None:
    await approved_write(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    audit_id = executing_id(rt, "update_dashboard")
    card, events = await _undo(rt, server, audit_id)
    assert card["summary"].startswith(f"Undo change #{audit_id}: Put back the dashboard "
                                      "'Executive Summary' in ss-dev")
    assert card["changes"] == [{"field": "title", "before": "Exec",
                                "after": "Executive Summary"}]
    assert card["dangerous"] is False
    (result,) = of_type(events, "tool_result")
    assert f'"undone": {audit_id}' in result["summary"]
    assert (await get_object(rt, "ss-dev", "dashboard", 1))["dashboard_title"] == \
        "Executive Summary"  # type: ignore[index]
    audited_as_undo_of(rt, audit_id)


async def test_undo_a_publish(rt: Runtime, server: ScriptedOpenAIServer) -> None:
    await approved_write(rt, server, "set_dashboard_published", dashboard_id=2,
                         published=False)
    assert (await get_object(rt, "ss-dev", "dashboard", 2))["published"] is False  # type: ignore[index]
    audit_id = executing_id(rt, "set_dashboard_published")
    card, _ = await _undo(rt, server, audit_id)
    assert card["changes"] == [{"field": "published", "before": False, "after": True}]
    assert (await get_object(rt, "ss-dev", "dashboard", 2))["published"] is True  # type: ignore[index]
    audited_as_undo_of(rt, audit_id)


async def test_undo_a_delete_brings_it_back_with_its_uuid(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    before = await get_object(rt, "prod", "dashboard", 3)
    assert before is not None
    await approved_write(rt, server, "delete_dashboard", env="prod", dashboard_id=3)
    assert await get_object(rt, "prod", "dashboard", before["uuid"]) is None
    audit_id = executing_id(rt, "delete_dashboard")
    card, _ = await _undo(rt, server, audit_id)
    assert card["dangerous"] is True and card["countdown_s"] == 10  # as dangerous as deleting
    assert card["summary"].startswith(f"Undo change #{audit_id}: Restore the deleted dashboard "
                                      "'Sales Overview' in prod from its saved copy (same uuid")
    back = await get_object(rt, "prod", "dashboard", before["uuid"])
    assert back is not None and back["dashboard_title"] == "Sales Overview"
    assert sorted(back["charts"]) == sorted(before["charts"])
    audited_as_undo_of(rt, audit_id)


async def test_undo_a_migration_that_overwrote_staging(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    staging = rt.superset.get("staging")
    await staging.put("dashboard", 1, {"dashboard_title": "Exec (staging)"}, what="setup")
    await approved_write(rt, server, "migrate_dashboard", dashboard_id=1,
                         source_env="ss-dev", target_env="staging")
    assert (await get_object(rt, "staging", "dashboard", 1))["dashboard_title"] == \
        "Executive Summary"  # type: ignore[index]
    audit_id = executing_id(rt, "migrate_dashboard")
    card, _ = await _undo(rt, server, audit_id)
    assert "from its copy saved before change" in card["summary"]
    assert {"field": "title", "before": "Executive Summary",
            "after": "Exec (staging)"} in card["changes"]
    assert (await get_object(rt, "staging", "dashboard", 1))["dashboard_title"] == \
        "Exec (staging)"  # type: ignore[index]
    audited_as_undo_of(rt, audit_id)


async def test_undo_a_migration_that_created_the_dashboard_deletes_it(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    uuid = (await get_object(rt, "ss-dev", "dashboard", 13))["uuid"]  # type: ignore[index]
    await approved_write(rt, server, "migrate_dashboard", dashboard_id=13,
                         source_env="ss-dev", target_env="staging")
    assert await get_object(rt, "staging", "dashboard", uuid) is not None
    card, _ = await _undo(rt, server, executing_id(rt, "migrate_dashboard"))
    assert card["summary"].startswith("Undo change #")
    assert "Delete the dashboard" in card["summary"]
    assert await get_object(rt, "staging", "dashboard", uuid) is None


async def test_undo_after_someone_else_changed_it_refuses_then_overwrites_when_confirmed(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    await approved_write(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    audit_id = executing_id(rt, "update_dashboard")
    await rt.superset.get("ss-dev").put("dashboard", 1, {"dashboard_title": "Someone else"},
                                        what="another person's edit")
    card, events = await _undo(rt, server, audit_id)
    assert "it changed since (title is now 'Someone else'" in card["summary"]
    assert "will refuse unless overwriting the newer change is confirmed" in card["summary"]
    (error,) = of_type(events, "tool_error")
    assert error["error"].startswith(f"Not undone: the dashboard changed after change "
                                     f"#{audit_id} (title is now 'Someone else'")
    assert (await get_object(rt, "ss-dev", "dashboard", 1))["dashboard_title"] == \
        "Someone else"  # type: ignore[index]
    assert pre_image(rt, audit_id).undone_by is None  # type: ignore[union-attr]

    card, events = await _undo(rt, server, audit_id, overwrite_newer=True)
    assert "approving overwrites that newer change" in card["summary"]
    assert of_type(events, "tool_result")
    assert (await get_object(rt, "ss-dev", "dashboard", 1))["dashboard_title"] == \
        "Executive Summary"  # type: ignore[index]
    image = pre_image(rt, audit_id)
    assert image is not None and image.undone_by is not None


async def test_a_change_is_undone_once(rt: Runtime, server: ScriptedOpenAIServer) -> None:
    await approved_write(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    audit_id = executing_id(rt, "update_dashboard")
    await _undo(rt, server, audit_id)
    undone_by = pre_image(rt, audit_id).undone_by  # type: ignore[union-attr]
    with pytest.raises(InputError, match=re.escape(
            f"Change #{audit_id} was already undone (audit #{undone_by}).")):
        await ask_undo(rt, audit_id)


async def test_only_the_person_who_made_it_may_undo_in_the_demo(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    await approved_write(rt, server, "update_dashboard", dashboard_id=1, title="Exec",
                         role="editor", conv_id="conv-e")
    audit_id = executing_id(rt, "update_dashboard")
    admin, _ = user(rt, "admin")
    rt.agent.open_conversation(admin, "conv-a")  # the admin's own conversation
    with pytest.raises(InputError, match=re.escape(
            f"Only the person who made change #{audit_id} (or an admin) can undo it.")):
        await ask_undo(rt, audit_id, role="admin", conv_id="conv-a")
    with pytest.raises(ConversationAccessError):  # and only in a conversation of one's own
        await ask_undo(rt, audit_id, role="admin", conv_id="conv-e")


async def test_a_change_without_a_pre_image_cannot_be_undone(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    await approved_write(rt, server, "update_dashboard", dashboard_id=1, title="Exec",
                         decision="approve without undo")
    audit_id = executing_id(rt, "update_dashboard")
    with pytest.raises(InputError, match=f"There is no change #{audit_id} with a saved copy"):
        await ask_undo(rt, audit_id)


async def test_the_model_cannot_undo_by_itself(rt: Runtime, server: ScriptedOpenAIServer
                                               ) -> None:
    await approved_write(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    server.reply_tool_calls(call("undo_change", audit_id=executing_id(rt, "update_dashboard")))
    server.reply_text("I cannot.")
    events = await turn(rt, "undo that")
    (denied,) = of_type(events, "permission_denied")
    assert "undo_change" in denied["reason"] and not of_type(events, "confirm_required")


async def test_undo_a_dataset_update_and_a_dataset_delete(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    before = await get_object(rt, "ss-dev", "dataset", 2)
    assert before is not None
    await approved_write(rt, server, "update_dataset", dataset_id=2, description="Changed")
    card, _ = await _undo(rt, server, executing_id(rt, "update_dataset"))
    assert card["changes"] == [{"field": "description", "before": "Changed",
                                "after": before["description"]}]
    assert (await get_object(rt, "ss-dev", "dataset", 2))["description"] == \
        before["description"]  # type: ignore[index]

    await approved_write(rt, server, "delete_dataset", dataset_id=2)
    assert await get_object(rt, "ss-dev", "dataset", 2) is None
    await _undo(rt, server, executing_id(rt, "delete_dataset"))
    rows = (await rt.superset.get("ss-dev").list_all("dataset"))
    back = next(row for row in rows if row.get("uuid") == before["uuid"])
    restored = await get_object(rt, "ss-dev", "dataset", int(back["id"]))
    assert restored is not None and restored["table_name"] == before["table_name"]
    assert len(restored["columns"]) == len(before["columns"])


async def test_overwriting_a_newer_change_can_be_confirmed_by_editing_the_undo(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    await approved_write(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    audit_id = executing_id(rt, "update_dashboard")
    await rt.superset.get("ss-dev").put("dashboard", 1, {"dashboard_title": "Someone else"},
                                        what="another person's edit")
    asked = await ask_undo(rt, audit_id)
    (card,) = of_type(asked, "confirm_required")
    identity, token = user(rt, "admin")
    server.reply_text("Restored.")
    events = await collect(await rt.agent.confirm(
        conv_id="conv-g", user_id=identity.user_id, user_jwt=token,
        confirmation_id=card["confirmation_id"], decision="approve",
        args={"audit_id": audit_id, "overwrite_newer": True}))
    (result,) = of_type(events, "tool_result")
    assert '"overwrote_newer_change": true' in result["summary"]
    assert (await get_object(rt, "ss-dev", "dashboard", 1))["dashboard_title"] == \
        "Executive Summary"  # type: ignore[index]


async def test_an_undo_can_be_undone_in_turn(rt: Runtime, server: ScriptedOpenAIServer
                                             ) -> None:
    await approved_write(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    _, events = await _undo(rt, server, executing_id(rt, "update_dashboard"))
    (result,) = of_type(events, "tool_result")
    assert result["undo_audit_id"] == executing_id(rt, "undo_change")  # it kept a copy too
    card, _ = await _undo(rt, server, result["undo_audit_id"])
    assert card["changes"] == [{"field": "title", "before": "Executive Summary",
                                "after": "Exec"}]
    assert (await get_object(rt, "ss-dev", "dashboard", 1))["dashboard_title"] == "Exec"  # type: ignore[index]

    uuid = (await get_object(rt, "ss-dev", "dashboard", 2))["uuid"]  # type: ignore[index]
    await approved_write(rt, server, "delete_dashboard", dashboard_id=2)
    _, events = await _undo(rt, server, executing_id(rt, "delete_dashboard"))
    assert await get_object(rt, "ss-dev", "dashboard", uuid) is not None
    (result,) = of_type(events, "tool_result")
    card, _ = await _undo(rt, server, result["undo_audit_id"])
    assert card["dangerous"] is True  # as dangerous as the delete it redoes
    assert "Delete the dashboard 'Marketing Funnel' in ss-dev again" in card["summary"]
    assert await get_object(rt, "ss-dev", "dashboard", uuid) is None
