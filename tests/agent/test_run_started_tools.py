"""`run_started.tools` lists exactly what the selection pipeline offers (SPEC §4)."""

from __future__ import annotations

import json

import pytest

from tests.fakes.runs import collect

EXPECTED = {  # (role, objectType) -> number of tools offered
    ("admin", "dashboard"): 10, ("admin", "dataset"): 8, ("admin", "migration"): 6,
    ("admin", None): 23,
    ("editor", "dashboard"): 9, ("editor", "dataset"): 7, ("editor", None): 21,
    ("viewer", "dashboard"): 7, ("viewer", "dataset"): 5, ("viewer", "migration"): 5,
    ("viewer", None): 16,
}


@pytest.mark.parametrize(("role", "object_type"), list(EXPECTED))
async def test_run_started_lists_the_offered_tools(runtime, role, object_type) -> None:  # type: ignore[no-untyped-def]
    identity, token = runtime.issuer.mint_demo(role)
    context = json.dumps({"objectType": object_type, "objectId": 3}) if object_type else None
    live = await runtime.agent.start_turn(message="", conv_id="", user_id=identity.user_id,
                                          user_jwt=token, env_id="ss-dev",
                                          uicontext_str=context)
    events = await collect(live)
    started = events[0]
    assert started["type"] == "run_started"
    assert len(started["tools"]) == EXPECTED[(role, object_type)]
    assert "show_capabilities" in started["tools"]
    risks = {spec.name: spec.risk for spec in runtime.registry.all()}
    allowed = {"viewer": {"read"}, "editor": {"read", "write"},
               "admin": {"read", "write", "dangerous"}}[role]
    assert {risks[name] for name in started["tools"]} <= allowed
