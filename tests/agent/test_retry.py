"""The retry policy (SPEC §5) against the demo Superset's fault injection: reads retry once
after 1 s on 502/503/504, then offer a manual retry; writes never retry, and a write that
times out is reported as status unknown and is never run again by the app."""

from __future__ import annotations

import pytest

from agent.confirmations import ConfirmationError
from agent.data_blocks import unwrap_data
from agent.settings import Settings
from runtime import Runtime
from tests.agent.guardrails_support import (
    audit_actions,
    call,
    confirm,
    pending_id,
    scripted_runtime,
    stored,
    turn,
    user,
)
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import collect, of_type


def _faults(rt: Runtime, spec: dict | None, env: str = "ss-dev") -> None:
    rt.demo_superset.set_faults(env, spec)


def _left(rt: Runtime, env: str = "ss-dev") -> int:
    return rt.demo_superset.get_faults()[env]["count"]


async def test_one_502_on_a_read_is_retried_once_then_succeeds(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    _faults(rt, {"status": 502, "count": 1, "methods": ["GET"]})
    server.reply_tool_calls(call("get_dashboard", dashboard_id=1))
    server.reply_text("It is the Executive Summary.")

    events = await turn(rt, "show dashboard 1", page="dashboard", object_id=1)

    kinds = [e["type"] for e in events if e["type"].startswith("tool_")]
    assert kinds == ["tool_call", "tool_retry", "tool_result"]
    (retry,) = of_type(events, "tool_retry")
    assert (retry["attempt"], retry["max_attempts"], retry["delay_s"]) == (1, 2, 1.0)
    assert "502" in retry["error"]
    assert events[-1]["status"] == "completed" and _left(rt) == 0


async def test_a_read_failing_twice_offers_a_manual_retry(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    _faults(rt, {"status": 503, "count": 2, "methods": ["GET"]})
    server.reply_tool_calls(call("get_dashboard", dashboard_id=1))
    server.reply_text("Superset is unavailable right now.")

    events = await turn(rt, "show dashboard 1", page="dashboard", object_id=1)

    (error,) = of_type(events, "tool_error")
    assert error["retry_exhausted"] is True and error["retryable"] is True
    assert len(of_type(events, "tool_retry")) == 1 and not of_type(events, "tool_result")
    assert "503" in server.requests[1].messages[-1]["content"]

    _faults(rt, None)
    server.reply_text("Here it is: Executive Summary.")
    identity, token = user(rt, "admin")
    live = await rt.agent.retry(conv_id="conv-g", user_id=identity.user_id, user_jwt=token,
                                call_id=error["call_id"])
    retried = await collect(live)

    assert [e["type"] for e in retried if e["type"].startswith("tool_")] == [
        "tool_call", "tool_result"]
    assert "Executive Summary" in of_type(retried, "tool_result")[0]["summary"]
    assert retried[-1]["status"] == "completed"
    sent = server.requests[2].messages
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "get_dashboard"
    assert sent[-1]["tool_call_id"] == sent[-2]["tool_calls"][0]["id"]


async def test_client_errors_are_not_retried(rt: Runtime, server: ScriptedOpenAIServer) -> None:
    server.reply_tool_calls(call("get_dashboard", dashboard_id=999))
    server.reply_text("Not found.")

    events = await turn(rt, "show dashboard 999", page="dashboard", object_id=999)

    (error,) = of_type(events, "tool_error")
    assert not of_type(events, "tool_retry")
    assert (error["retryable"], error["retry_exhausted"]) == (False, False)
    identity, token = user(rt, "admin")
    with pytest.raises(ConfirmationError):
        await rt.agent.retry(conv_id="conv-g", user_id=identity.user_id, user_jwt=token,
                             call_id=error["call_id"])


async def test_a_write_failing_with_502_is_not_retried(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    _faults(rt, {"status": 502, "count": 3, "methods": ["PUT"]})
    server.reply_tool_calls(call("set_dashboard_published", dashboard_id=1, published=False))
    events = await turn(rt, "unpublish dashboard 1", page="dashboard", object_id=1)
    server.reply_text("That failed.")

    resumed = await confirm(rt, pending_id(events))

    (error,) = of_type(resumed, "tool_error")
    assert not of_type(resumed, "tool_retry")
    assert (error["retryable"], error["retry_exhausted"]) == (False, False)
    assert _left(rt) == 2  # exactly one PUT reached Superset
    assert audit_actions(rt)[-1][0] == "executed"
    assert audit_actions(rt)[-1][2].startswith("failed")


async def test_a_write_that_times_out_is_status_unknown_and_never_rerun(
    settings: Settings, server: ScriptedOpenAIServer
) -> None:
    rt = scripted_runtime(settings, server, tool_timeout_write_s=0.5)
    try:
        _faults(rt, {"status": 504, "count": 5, "methods": ["DELETE"], "latency_ms": 3000})
        server.reply_tool_calls(call("delete_dashboard", dashboard_id=2))
        events = await turn(rt, "delete dashboard 2", page="dashboard", object_id=2)
        server.reply_text("I cannot tell whether it was deleted; please check Superset.")

        resumed = await confirm(rt, pending_id(events))

        (timeout,) = of_type(resumed, "tool_timeout")
        assert (timeout["is_write_tool"], timeout["retryable"]) == (True, False)
        assert timeout["timeout_s"] == 0.5
        assert timeout["message"].startswith("Operation status unknown — check Superset")
        assert not of_type(resumed, "tool_retry") and not of_type(resumed, "tool_error")
        assert _left(rt) == 4  # one DELETE attempt, no second one
        told = unwrap_data(server.requests[1].messages[-1]["content"])
        assert told.startswith("Error: status unknown") and "Do not call it again" in told
        assert stored(rt)[-2].meta["status"] == "unknown"
        assert audit_actions(rt)[-1] == ("executed", "delete_dashboard",
                                         "status unknown (timed out)")
        identity, token = user(rt, "admin")
        with pytest.raises(ConfirmationError):
            await rt.agent.retry(conv_id="conv-g", user_id=identity.user_id, user_jwt=token,
                                 call_id=timeout["call_id"])
        with pytest.raises(ConfirmationError, match="already approved"):
            await confirm(rt, pending_id(events))
        assert _left(rt) == 4
    finally:
        rt.close()


async def test_a_write_stopped_mid_flight_is_status_unknown_not_not_executed(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    import asyncio

    _faults(rt, {"status": 504, "count": 5, "methods": ["DELETE"], "latency_ms": 5000})
    server.reply_tool_calls(call("delete_dashboard", dashboard_id=2))
    events = await turn(rt, "delete dashboard 2", page="dashboard", object_id=2)
    identity, token = user(rt, "admin")
    live = await rt.agent.confirm(conv_id="conv-g", user_id=identity.user_id, user_jwt=token,
                                  confirmation_id=pending_id(events), decision="approve")
    for _ in range(200):  # until the DELETE is on its way (the fault holds it 5 s)
        if _left(rt) == 4:
            break
        await asyncio.sleep(0.02)
    assert _left(rt) == 4
    live.cancel()
    await asyncio.wait_for(live.finished.wait(), timeout=10)

    assert live.events[-1]["status"] == "cancelled"
    result = [r for r in stored(rt) if r.role == "tool"][-1]
    assert result.role == "tool" and result.meta["status"] == "unknown"
    assert result.content.startswith("Error: status unknown — the run was stopped")
    assert [r for r in stored(rt) if r.role == "tool" and "Not executed" in r.content] == []
    assert audit_actions(rt)[-1] == (
        "executed", "delete_dashboard", "status unknown (the run was stopped while running)")
