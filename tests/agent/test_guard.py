"""The selection pipeline, the invocation guard and the risk axes (SPEC §3, §4).

Pure rules are checked on the real catalog; the guard's behaviour end to end through a
scripted model (litellm against the loopback OpenAI server) and the real demo Superset.
"""

from __future__ import annotations

import pytest

from agent.guard import assess, check_invocation, target_env
from agent.tools.catalog import all_tools
from agent.tools.registry import ToolRegistry, select_tools
from runtime import Runtime
from tests.agent.guardrails_support import (
    audit_actions,
    call,
    dashboard,
    dataset,
    stored,
    turn,
)
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import of_type

REGISTRY = ToolRegistry(all_tools())
TIERS = {"ss-dev": "dev", "staging": "staging", "prod": "prod"}


def _names(role: str, page: str | None) -> set[str]:
    return {spec.name for spec in select_tools(REGISTRY, role=role, object_type=page)}


# selection ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("page", "count"), [("dashboard", 10), ("dataset", 8),
                                             ("migration", 6), (None, 23)])
def test_admin_sees_every_tool_of_the_page(page: str | None, count: int) -> None:
    assert len(_names("admin", page)) == count
    assert "show_capabilities" in _names("admin", page)


def test_rbac_runs_before_affinity() -> None:
    viewer, editor = _names("viewer", "dashboard"), _names("editor", "dashboard")
    assert viewer == {"show_capabilities", "list_dashboards", "get_dashboard",
                      "get_dashboard_charts", "get_dashboard_datasets", "export_dashboard",
                      "recent_changes"}
    assert editor == viewer | {"update_dashboard", "set_dashboard_published"}
    assert all(REGISTRY.get(n).risk == "read" for n in _names("viewer", None))  # type: ignore[union-attr]
    assert not {n for n in _names("editor", None) if REGISTRY.get(n).risk == "dangerous"}  # type: ignore[union-attr]
    assert "migrate_dashboard" in _names("editor", "migration")


# the guard ------------------------------------------------------------------------------------


def test_guard_refuses_unknown_forbidden_and_off_page_calls() -> None:
    offered = _names("viewer", "dashboard")
    spec, denial = check_invocation(REGISTRY, "drop_everything", role="admin",
                                    object_type=None, offered=_names("admin", None))
    assert spec is None and denial and denial.action == "not_offered"
    _, denial = check_invocation(REGISTRY, "delete_dashboard", role="viewer",
                                 object_type="dashboard", offered=offered)
    assert denial and denial.action == "denied_by_role" and denial.required_role == "admin"
    _, denial = check_invocation(REGISTRY, "delete_dataset", role="admin",
                                 object_type="dashboard", offered=_names("admin", "dashboard"))
    assert denial and denial.action == "not_offered"
    _, denial = check_invocation(REGISTRY, "get_dashboard", role="viewer",
                                 object_type="dashboard", offered=offered)
    assert denial is None


# risk -----------------------------------------------------------------------------------------


def _risk(name: str, args: dict, run_env: str | None, role: str = "admin"):  # type: ignore[no-untyped-def]
    return assess(REGISTRY.get(name), args, run_env=run_env, role=role, tiers=TIERS)  # type: ignore[arg-type]


def test_environment_precedence_tool_argument_then_run_environment() -> None:
    spec = REGISTRY.get("get_dashboard")
    assert target_env(spec, {"env_id": "staging"}, "ss-dev") == "staging"  # type: ignore[arg-type]
    assert target_env(spec, {}, "ss-dev") == "ss-dev"  # type: ignore[arg-type]
    assert target_env(spec, {}, None) is None  # type: ignore[arg-type]
    migrate = REGISTRY.get("migrate_dashboard")
    assert target_env(migrate, {"source_env": "ss-dev", "target_env": "prod"}, "ss-dev") == "prod"  # type: ignore[arg-type]


def test_dangerous_for_dangerous_tools_and_for_writes_to_prod() -> None:
    assert _risk("get_dashboard", {}, "prod").dangerous is False
    update_dev = _risk("update_dashboard", {"dashboard_id": 1}, "ss-dev")
    assert (update_dev.tool_risk, update_dev.env_risk, update_dev.dangerous) == (
        "write", "dev", False)
    assert _risk("update_dashboard", {"dashboard_id": 1, "env_id": "prod"}, "ss-dev").dangerous
    assert _risk("delete_dashboard", {"dashboard_id": 1}, "ss-dev").dangerous
    to_prod = _risk("migrate_dashboard", {"source_env": "staging", "target_env": "prod"}, "prod")
    assert to_prod.dangerous and to_prod.env_risk == "prod"
    to_staging = _risk("migrate_dashboard", {"source_env": "prod", "target_env": "staging"},
                       "prod")
    assert not to_staging.dangerous and to_staging.env_risk == "staging"
    assert _risk("delete_dashboard", {}, "ss-dev").permission_risk == "allowed"
    assert _risk("delete_dashboard", {}, "ss-dev", role="editor").permission_risk == "denied"


def test_unknown_environment_is_treated_as_prod() -> None:
    unknown = _risk("update_dataset", {"dataset_id": 1, "env_id": "eu-west"}, None)
    assert unknown.env_risk == "prod" and unknown.dangerous
    assert _risk("update_dataset", {"dataset_id": 1, "env_id": "uat-2"}, None).env_risk == (
        "staging")


# end to end -----------------------------------------------------------------------------------


async def test_viewer_delete_is_denied_audited_and_never_executed(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_tool_calls(call("delete_dashboard", dashboard_id=3, env_id="prod"))
    server.reply_text("I can't do that.")

    events = await turn(rt, "delete dashboard 3", role="viewer", env="prod", page="dashboard",
                        object_id=3)

    assert "delete_dashboard" not in events[0]["tools"]
    assert "delete_dashboard" not in server.requests[0].tool_names
    (denied,) = of_type(events, "permission_denied")
    assert denied["tool"] == "delete_dashboard" and denied["required_role"] == "admin"
    assert not of_type(events, "confirm_required") and not of_type(events, "tool_call")
    assert dashboard(rt, "prod", 3) is not None
    assert audit_actions(rt) == [("denied_by_role", "delete_dashboard", denied["reason"])]
    told = server.requests[1].messages[-1]
    assert told["role"] == "tool" and "Nothing was executed" in told["content"]
    assert events[-1]["status"] == "completed"


async def test_tool_of_another_page_is_denied_even_for_admin(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_tool_calls(call("delete_dataset", dataset_id=2))
    server.reply_text("That is not available here.")

    events = await turn(rt, "delete dataset 2", page="dashboard", object_id=1)

    assert "delete_dataset" not in events[0]["tools"]
    (denied,) = of_type(events, "permission_denied")
    assert denied["tool"] == "delete_dataset" and "not offered" in denied["reason"]
    assert not of_type(events, "confirm_required")
    assert dataset(rt, "ss-dev", 2) is not None
    assert [a for a, _, _ in audit_actions(rt)] == ["not_offered"]
    assert stored(rt)[-2].meta["status"] == "denied"


async def test_hallucinated_tool_is_denied(rt: Runtime, server: ScriptedOpenAIServer) -> None:
    server.reply_tool_calls(call("drop_database", database_id=1))
    server.reply_text("Sorry.")

    events = await turn(rt, "drop the database")

    (denied,) = of_type(events, "permission_denied")
    assert denied["tool"] == "drop_database"
    assert "Permission denied" in server.requests[1].messages[-1]["content"]


async def test_offline_model_tells_a_viewer_the_role_does_not_allow_it(
    runtime: Runtime,
) -> None:
    events = await turn(runtime, "delete dashboard 3", role="viewer", env="prod",
                        page="dashboard", object_id=3)

    assert not of_type(events, "tool_call") and not of_type(events, "permission_denied")
    (message,) = of_type(events, "message")
    assert "role (viewer) does not allow" in message["content"]
    assert dashboard(runtime, "prod", 3) is not None
