"""The tool catalog (23 tools: SPEC §4's 22 and `recent_changes`; affinity 10/8/6/23), the
runtime wiring of the Superset clients and demo server, and Superset tool results reaching the
model through the loop."""

from __future__ import annotations

import json

import pytest

from agent.settings import Settings
from agent.superset.clients import SupersetClients
from agent.tools.catalog import all_tools
from agent.tools.registry import ToolRegistry, select_tools
from runtime import Runtime, build_runtime
from tests.fakes.openai_server import ScriptedCall
from tests.fakes.runs import collect, of_type

SPEC_RISKS = {
    "show_capabilities": "read", "list_environments": "read", "list_charts": "read",
    "list_dashboards": "read", "get_dashboard": "read", "get_dashboard_charts": "read",
    "get_dashboard_datasets": "read", "export_dashboard": "read",
    "update_dashboard": "write", "set_dashboard_published": "write",
    "delete_dashboard": "dangerous",
    "list_datasets": "read", "get_dataset": "read", "get_dataset_usage": "read",
    "preview_dataset": "read", "refresh_dataset_columns": "write", "update_dataset": "write",
    "delete_dataset": "dangerous",
    "compare_environments": "read", "plan_migration": "read", "migration_history": "read",
    "migrate_dashboard": "write",
    "recent_changes": "read",  # issue 13: a deliberate addition to SPEC §4
}


def test_catalog_has_the_23_tools_with_their_risks():
    tools = all_tools()
    assert {t.name: t.risk for t in tools} == SPEC_RISKS
    assert len(ToolRegistry(tools)) == 23
    for spec in tools:
        assert spec.openai_schema["function"]["name"] == spec.name  # schemas build


@pytest.mark.parametrize(("object_type", "count"), [
    ("dashboard", 10), ("dataset", 8), ("migration", 6), (None, 23)])
def test_affinity_counts_for_an_admin(object_type, count):
    offered = select_tools(ToolRegistry(all_tools()), role="admin", object_type=object_type)
    assert len(offered) == count
    assert "show_capabilities" in {t.name for t in offered}


def test_viewer_gets_read_tools_and_editor_no_dangerous_ones():
    registry = ToolRegistry(all_tools())
    viewer = select_tools(registry, role="viewer", object_type=None)
    editor = select_tools(registry, role="editor", object_type=None)
    assert {t.risk for t in viewer} == {"read"}
    assert "dangerous" not in {t.risk for t in editor} and "write" in {t.risk for t in editor}


def test_single_environment_tools_use_the_resolved_env():
    by_name = {t.name: t for t in all_tools()}
    env_tools = {n for n, t in by_name.items() if t.uses_env}
    assert env_tools == set(SPEC_RISKS) - {"show_capabilities", "list_environments",
                                           "compare_environments", "plan_migration",
                                           "migration_history", "migrate_dashboard"}


def test_runtime_wires_clients_and_the_demo_server(runtime: Runtime):
    assert len(runtime.registry) == 23
    clients = runtime.superset
    assert isinstance(clients, SupersetClients)
    assert clients.names == ["ss-dev", "staging", "prod"]
    assert runtime.demo_superset is not None
    assert (runtime.settings.data_dir / "demo_superset.db").exists()


def test_runtime_without_demo_envs_starts_no_demo_server(settings: Settings):
    real = settings.model_copy(update={"superset_environments": [
        {"name": "prod-eu", "base_url": "http://127.0.0.1:9", "auth_mode": "service",
         "username": "svc", "password": "pw"}]})
    runtime = build_runtime(Settings.model_validate(real.model_dump()))
    try:
        assert runtime.demo_superset is None
        assert runtime.superset.names == ["prod-eu"]
    finally:
        runtime.close()


# through the agent loop -------------------------------------------------------------------


async def _turn(rt: Runtime, message: str) -> list[dict]:
    identity, token = rt.issuer.mint_demo("admin")
    live = await rt.agent.start_turn(message=message, conv_id=None, user_id=identity.user_id,
                                     user_jwt=token, env_id="ss-dev", uicontext_str=None)
    return await collect(live)


async def test_list_the_dashboards_reaches_the_model_with_the_count(scripted, server):
    server.reply_tool_calls(ScriptedCall("list_dashboards", "{}"))
    server.reply_text("There are dashboards.")
    events = await _turn(scripted, "list the dashboards")
    [result] = of_type(events, "tool_result")
    expected = len(scripted.demo_superset.store.all("ss-dev", "dashboard"))
    assert json.loads(result["summary"])["count"] == expected
    assert result["truncated"] is False
    tool_message = server.requests[-1].messages[-1]
    assert tool_message["role"] == "tool" and f'"count": {expected}' in tool_message["content"]


async def test_long_tool_output_reaches_the_model_truncated(scripted, server):
    server.reply_tool_calls(ScriptedCall("list_charts", json.dumps({"page_size": 100})))
    server.reply_text("Many charts.")
    events = await _turn(scripted, "list all charts")
    [result] = of_type(events, "tool_result")
    assert result["truncated"] is True
    limit = scripted.settings.tool_output_limit_chars
    assert len(result["summary"]) <= limit
    sampled = json.loads(result["summary"])
    assert sampled["count"] == len(scripted.demo_superset.store.all("ss-dev",
                                                                                "chart"))
    assert sampled["charts"][-1].startswith("... and (")
    assert len(server.requests[-1].messages[-1]["content"]) <= limit


async def test_list_dashboards_filters_by_published_state(runtime) -> None:  # type: ignore[no-untyped-def]
    """The filter reaches Superset (rison `published eq`), and the answer says which."""
    from tests.fakes.runs import collect, of_type

    identity, token = runtime.issuer.mint_demo("viewer")
    store = runtime.demo_superset.store
    drafts = {d["id"] for d in store.all("ss-dev", "dashboard") if not d["published"]}
    assert drafts, "the demo seeds some drafts"
    live = await runtime.agent.start_turn(message="list the draft dashboards", conv_id="drafts",
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id="ss-dev", uicontext_str=None)
    events = await collect(live)
    (result,) = of_type(events, "tool_result")
    import json
    listed = json.loads(result["summary"])["dashboards"]
    assert {d["id"] for d in listed} == drafts
    (message,) = of_type(events, "message")
    assert message["content"].startswith(f"Found {len(drafts)} draft dashboard")
