"""Confirmations end to end (SPEC §6): a scripted model asks for a write, the run pauses,
the decision resumes it. Real demo Superset, real storage on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from agent.confirmations import ConfirmationError
from agent.data_blocks import unwrap_data
from agent.errors import ConversationAccessError, InputError
from agent.run_leases import BUSY, ConversationBusy
from agent.settings import Settings
from runtime import Runtime
from tests.agent.guardrails_support import (
    audit_actions,
    call,
    confirm,
    dashboard,
    dataset,
    pending_id,
    scripted_runtime,
    stored,
    turn,
    user,
)
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import collect, of_type


async def _ask_to_delete_in_prod(rt: Runtime, server: ScriptedOpenAIServer
                                 ) -> list[dict]:
    server.reply_tool_calls(call("delete_dashboard", dashboard_id=3), text="Deleting it.")
    return await turn(rt, "delete this dashboard", env="prod", page="dashboard", object_id=3)


async def test_dangerous_delete_waits_for_approval_then_runs_once(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    before = time.time()
    events = await _ask_to_delete_in_prod(rt, server)

    (card,) = of_type(events, "confirm_required")
    assert card["dangerous"] is True and card["countdown_s"] == 10
    assert (card["tool"], card["args"], card["env_id"]) == (
        "delete_dashboard", {"dashboard_id": 3}, "prod")
    assert (card["tool_risk"], card["env_risk"], card["permission_risk"]) == (
        "dangerous", "prod", "allowed")
    assert card["summary"] == "Delete dashboard #3 'Sales Overview' in prod — used by 4 charts"
    assert before + 900 - 5 <= card["expires_at"] <= time.time() + 900
    assert events[-1]["type"] == "done" and events[-1]["status"] == "awaiting_confirmation"
    assert dashboard(rt, "prod", 3) is not None
    assert audit_actions(rt) == []
    assert len(server.requests) == 1

    server.reply_text("Dashboard 3 is deleted.")
    resumed = await confirm(rt, card["confirmation_id"])

    assert resumed[0]["type"] == "run_started" and resumed[-1]["status"] == "completed"
    (result,) = of_type(resumed, "tool_result")
    assert result["call_id"] == card["call_id"] and '"deleted": 3' in result["summary"]
    assert dashboard(rt, "prod", 3) is None
    assert [(a, o) for a, _, o in audit_actions(rt)] == [
        ("approved", "approved by demo-admin"),
        ("executing", "sent to Superset; outcome pending"),  # write-ahead, before the request
        ("executed", "succeeded")]
    sent = server.requests[1].messages
    assert [m["role"] for m in sent[-3:]] == ["user", "assistant", "tool"]
    assert sent[-2]["tool_calls"][0]["id"] == sent[-1]["tool_call_id"] == card["call_id"]

    with pytest.raises(ConfirmationError, match="already approved"):
        await confirm(rt, card["confirmation_id"])
    assert [a for a, _, _ in audit_actions(rt)] == ["approved", "executing", "executed"]


async def test_a_write_outside_prod_asks_without_countdown(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_tool_calls(call("update_dashboard", dashboard_id=1, title="Exec"))
    events = await turn(rt, "rename dashboard 1 to Exec", role="editor", page="dashboard",
                        object_id=1)
    (card,) = of_type(events, "confirm_required")
    assert (card["dangerous"], card["countdown_s"], card["env_risk"]) == (False, 0, "dev")
    charts = len(dashboard(rt, "ss-dev", 1)["chart_ids"])  # type: ignore[index]
    assert card["summary"] == (f"Update dashboard #1 'Executive Summary' in ss-dev "
                               f"({charts} charts on it): title → 'Exec'")
    assert dashboard(rt, "ss-dev", 1)["dashboard_title"] == "Executive Summary"  # type: ignore[index]


async def test_the_paused_call_is_left_out_of_the_prompt_until_decided(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    """A stored transcript with a pending call stays valid; a new turn closes the call."""
    events = await _ask_to_delete_in_prod(rt, server)
    server.reply_text("OK, something else then.")

    await turn(rt, "never mind, what can you do?", env="prod", page="dashboard", object_id=3)

    sent = server.requests[1].messages
    assistant = next(m for m in sent if m.get("tool_calls"))
    answer = next(m for m in sent if m["role"] == "tool")
    assert answer["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert unwrap_data(answer["content"]).startswith("Not executed")
    assert ("superseded", "delete_dashboard") in [(a, t) for a, t, _ in audit_actions(rt)]
    with pytest.raises(ConfirmationError, match="already superseded"):
        await confirm(rt, pending_id(events))
    assert dashboard(rt, "prod", 3) is not None


async def test_deny_tells_the_model_and_runs_nothing(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_tool_calls(call("delete_dataset", dataset_id=2), text="")
    events = await turn(rt, "delete dataset 2", page="dataset", object_id=2)
    (card,) = of_type(events, "confirm_required")
    assert card["summary"].startswith("Delete dataset #2 'orders' in ss-dev — used by ")
    assert card["summary"].endswith(", which will stop working")
    server.reply_text("Understood, I left it alone.")

    resumed = await confirm(rt, card["confirmation_id"], "deny")

    assert not of_type(resumed, "tool_result")
    assert of_type(resumed, "tool_error")[0]["error"].startswith("Denied")
    assert unwrap_data(server.requests[1].messages[-1]["content"]).startswith("Declined")
    assert of_type(resumed, "message")[0]["content"] == "Understood, I left it alone."
    assert dataset(rt, "ss-dev", 2) is not None
    with pytest.raises(ConfirmationError, match="already denied"):
        await confirm(rt, card["confirmation_id"])
    assert [a for a, _, _ in audit_actions(rt)] == ["denied"]
    assert dataset(rt, "ss-dev", 2) is not None


async def test_an_expired_confirmation_does_nothing(
    settings: Settings, server: ScriptedOpenAIServer
) -> None:
    rt = scripted_runtime(settings, server, confirmation_ttl_s=1)
    try:
        events = await _ask_to_delete_in_prod(rt, server)
        await asyncio.sleep(1.3)
        with pytest.raises(ConfirmationError, match="expired"):
            await confirm(rt, pending_id(events))
        assert dashboard(rt, "prod", 3) is not None
        assert [a for a, _, _ in audit_actions(rt)] == ["expired"]
        assert stored(rt)[-1].content.startswith("Not executed")
        with pytest.raises(ConfirmationError, match="already expired"):
            await confirm(rt, pending_id(events))
    finally:
        rt.close()


async def test_only_the_owner_can_decide(rt: Runtime, server: ScriptedOpenAIServer) -> None:
    events = await _ask_to_delete_in_prod(rt, server)
    other = rt.issuer.mint(user_id="other-admin", name="Other", role="admin")

    with pytest.raises(ConversationAccessError):
        await rt.agent.confirm(conv_id="conv-g", user_id="other-admin", user_jwt=other,
                               confirmation_id=pending_id(events), decision="approve")
    # the other user's own conversation does not reach it either
    rt.agent.open_conversation(rt.issuer.verify(user_id="other-admin", token=other), "conv-o")
    with pytest.raises(ConfirmationError, match="No such confirmation"):
        await rt.agent.confirm(conv_id="conv-o", user_id="other-admin", user_jwt=other,
                               confirmation_id=pending_id(events), decision="approve")
    with pytest.raises(InputError):
        await confirm(rt, pending_id(events), "maybe")
    assert dashboard(rt, "prod", 3) is not None and audit_actions(rt) == []


async def test_racing_approvals_on_two_replicas_execute_once(
    settings: Settings, server: ScriptedOpenAIServer
) -> None:
    first, second = scripted_runtime(settings, server), scripted_runtime(settings, server)
    try:
        events = await _ask_to_delete_in_prod(first, server)
        server.reply_text("Deleted.")
        identity, token = user(first, "admin")
        outcomes = await asyncio.gather(*(
            rt.agent.confirm(conv_id="conv-g", user_id=identity.user_id, user_jwt=token,
                             confirmation_id=pending_id(events), decision="approve")
            for rt in (first, second)), return_exceptions=True)
        runs = [o for o in outcomes if not isinstance(o, BaseException)]
        refused = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(runs) == 1 and len(refused) == 1
        # The loser meets the conversation's run lease (another replica's run holds it) or,
        # had it come later, the single-use approval itself.
        assert isinstance(refused[0], ConversationBusy | ConfirmationError)
        assert "already approved" in str(refused[0]) or str(refused[0]) == BUSY
        await collect(runs[0])
        assert [a for a, _, _ in audit_actions(first)] == ["approved", "executing", "executed"]
        assert dashboard(first, "prod", 3) is None
    finally:
        first.close()
        second.close()


async def test_approval_after_a_restart_resumes_the_run(
    settings: Settings, server: ScriptedOpenAIServer
) -> None:
    before = scripted_runtime(settings, server)
    try:
        events = await _ask_to_delete_in_prod(before, server)
    finally:
        before.close()
    after = scripted_runtime(settings, server)
    try:
        server.reply_text("Done.")
        resumed = await confirm(after, pending_id(events))
        assert of_type(resumed, "tool_result") and resumed[-1]["status"] == "completed"
        assert resumed[0]["context"]["objectType"] == "dashboard"
        assert resumed[0]["env_id"] == "prod"
        assert dashboard(after, "prod", 3) is None
    finally:
        after.close()


async def test_later_calls_of_a_paused_step_are_answered_not_run(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_tool_calls(call("get_dashboard", dashboard_id=1),
                            call("delete_dashboard", dashboard_id=1),
                            call("set_dashboard_published", dashboard_id=2, published=False))
    events = await turn(rt, "look, delete, unpublish", page="dashboard", object_id=1)

    assert [e["tool"] for e in of_type(events, "tool_result")] == ["get_dashboard"]
    assert len(of_type(events, "confirm_required")) == 1
    last = stored(rt)[-1]
    assert last.tool_name == "set_dashboard_published"
    assert last.content.startswith("Not executed: delete_dashboard is waiting")
    assert dashboard(rt, "ss-dev", 2)["published"] is True  # type: ignore[index]


async def test_migrating_into_prod_is_dangerous_for_an_editor_too(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    store = rt.demo_superset.store
    before = store.all("prod", "dashboard")
    server.reply_tool_calls(call("migrate_dashboard", dashboard_id=7, source_env="staging",
                                 target_env="prod"))
    events = await turn(rt, "promote dashboard 7 to prod", role="editor", env="staging",
                        page="migration", object_id=7)

    (tool_call,) = of_type(events, "tool_call")
    assert tool_call["env_id"] == "prod"
    (card,) = of_type(events, "confirm_required")
    assert (card["tool_risk"], card["env_id"], card["env_risk"]) == ("write", "prod", "prod")
    assert card["dangerous"] is True and card["countdown_s"] == 10
    assert card["summary"].startswith("Migrate dashboard #7 'Support Operations' with its "
                                      "charts and datasets from staging to prod")
    assert store.all("prod", "dashboard") == before


async def test_an_update_card_says_what_depends_on_the_object(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    """Issue 11, item 4: "used by 4 charts on 2 dashboards" before a person approves."""
    server.reply_tool_calls(call("update_dataset", dataset_id=2, description="Orders v2"))
    events = await turn(rt, "describe dataset 2 as Orders v2", role="editor", page="dataset",
                        object_id=2)
    (card,) = of_type(events, "confirm_required")
    assert re.fullmatch(r"Update dataset #2 'orders' in ss-dev \(used by \d+ charts? on \d+ "
                        r"dashboards?\): description → 'Orders v2'", card["summary"]), card
