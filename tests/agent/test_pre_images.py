"""Pre-images (issue 15, phase 1): before an approved write runs, what it will change is read
and stored with its `executing` audit row; no copy, no write, unless approved "without
undo". Real demo Superset (fault injection for the 502), real storage on SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest

from agent.confirmations import parse_decision
from agent.superset.bundle import read_bundle
from runtime import Runtime
from tests.agent.guardrails_support import confirm, dashboard, dataset
from tests.agent.undo_support import (
    all_pre_images,
    approved_write,
    audit_rows,
    pre_image,
    propose,
)
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import of_type


def _executing(rt: Runtime, tool: str) -> int:
    (row,) = [r for r in audit_rows(rt, tool) if r.action == "executing"]
    assert row.id is not None
    return row.id


async def test_a_dashboard_update_keeps_its_bundle_and_fields_with_the_audit_row(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    uuid = dashboard(rt, "ss-dev", 1)["uuid"]  # type: ignore[index]
    events = await approved_write(rt, server, "update_dashboard", dashboard_id=1,
                                  title="Exec")
    (result,) = of_type(events, "tool_result")
    audit_id = _executing(rt, "update_dashboard")
    assert result["undo_audit_id"] == audit_id
    image = pre_image(rt, audit_id)
    assert image is not None and (image.kind, image.env_id, image.object_id) == (
        "dashboard", "ss-dev", 1)
    assert image.object_uuid == uuid and image.existed
    assert image.fields["title"] == "Executive Summary"  # type: ignore[index]
    bundle = read_bundle(image.bundle or b"")
    (dash,) = bundle.of_kind("dashboard")
    assert (dash.uuid, dash.name) == (uuid, "Executive Summary")
    assert image.after is not None and image.after["title"] == "Exec"
    assert dashboard(rt, "ss-dev", 1)["dashboard_title"] == "Exec"  # type: ignore[index]


@pytest.mark.parametrize("tool, args", [
    ("set_dashboard_published", {"dashboard_id": 2, "published": False}),
    ("delete_dashboard", {"dashboard_id": 2}),
])
async def test_publish_and_delete_keep_the_dashboards_bundle(
    rt: Runtime, server: ScriptedOpenAIServer, tool: str, args: dict
) -> None:
    await approved_write(rt, server, tool, **args)
    image = pre_image(rt, _executing(rt, tool))
    assert image is not None and image.fields["published"] is True  # type: ignore[index]
    assert read_bundle(image.bundle or b"").of_kind("dashboard")[0].name == "Marketing Funnel"
    if tool == "delete_dashboard":
        assert dashboard(rt, "ss-dev", 2) is None and image.after == {"deleted": True}


@pytest.mark.parametrize("tool, args", [
    ("update_dataset", {"dataset_id": 2, "description": "Orders, cleaned"}),
    ("refresh_dataset_columns", {"dataset_id": 2}),
    ("delete_dataset", {"dataset_id": 2}),
])
async def test_dataset_writes_keep_its_fields_and_export(
    rt: Runtime, server: ScriptedOpenAIServer, tool: str, args: dict
) -> None:
    before = dataset(rt, "ss-dev", 2)
    assert before is not None
    await approved_write(rt, server, tool, **args)
    image = pre_image(rt, _executing(rt, tool))
    assert image is not None and image.kind == "dataset" and image.object_id == 2
    assert image.fields["description"] == before["description"]  # type: ignore[index]
    assert image.fields["table_name"] == "orders"  # type: ignore[index]
    bundle = read_bundle(image.bundle or b"")
    assert bundle.metadata["type"] == "SqlaTable"
    assert [obj.uuid for obj in bundle.of_kind("dataset")] == [before["uuid"]]


async def test_a_migration_keeps_the_targets_copy_it_overwrites(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    staged = dashboard(rt, "staging", 1)
    assert staged is not None
    await approved_write(rt, server, "migrate_dashboard", dashboard_id=1,
                         source_env="ss-dev", target_env="staging")
    image = pre_image(rt, _executing(rt, "migrate_dashboard"))
    assert image is not None and (image.env_id, image.object_id, image.existed) == (
        "staging", 1, True)
    assert image.object_uuid == staged["uuid"]
    assert read_bundle(image.bundle or b"").of_kind("dashboard")[0].uuid == staged["uuid"]


async def test_a_migration_into_a_target_without_it_notes_it_was_absent(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    await approved_write(rt, server, "migrate_dashboard", dashboard_id=13,
                         source_env="ss-dev", target_env="staging")
    image = pre_image(rt, _executing(rt, "migrate_dashboard"))
    assert image is not None and image.existed is False and image.bundle is None
    assert image.object_uuid == dashboard(rt, "ss-dev", 13)["uuid"]  # type: ignore[index]


async def test_a_502_on_the_export_stops_the_write_unless_approved_without_undo(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    card = await propose(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    export_fails = {"status": 502, "count": 5, "methods": ["GET"], "path_contains": "/export/"}
    rt.demo_superset.set_faults("ss-dev", export_fails)
    server.reply_text("It did not run.")
    events = await confirm(rt, card["confirmation_id"])
    (error,) = of_type(events, "tool_error")
    assert error["error"].startswith("Not executed: the copy of what update_dashboard would "
                                     "change could not be read")
    assert "'without undo'" in error["error"] and "502" in error["error"]
    assert dashboard(rt, "ss-dev", 1)["dashboard_title"] == "Executive Summary"  # type: ignore[index]
    actions = [(r.action, r.tool) for r in audit_rows(rt)]
    assert ("not_executed", "update_dashboard") in actions
    assert ("executing", "update_dashboard") not in actions and all_pre_images(rt) == []

    card = await propose(rt, server, "update_dashboard", dashboard_id=1, title="Exec")
    server.reply_text("Done.")
    events = await confirm(rt, card["confirmation_id"], "approve without undo")
    (result,) = of_type(events, "tool_result")
    assert result["undo_audit_id"] is None
    rt.demo_superset.set_faults("ss-dev", None)
    assert dashboard(rt, "ss-dev", 1)["dashboard_title"] == "Exec"  # type: ignore[index]
    assert [r.outcome for r in audit_rows(rt) if r.action == "approved"][-1].startswith(
        "approved without undo by ")
    assert all_pre_images(rt) == []


def test_without_undo_is_a_distinct_choice() -> None:
    assert parse_decision("approve") == "approve"
    assert parse_decision("approve_without_undo") == "approve_without_undo"
    assert parse_decision("Approve without undo") == "approve_without_undo"
