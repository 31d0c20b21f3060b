"""The agent loop through the real provider path: litellm against a scripted OpenAI server.

Each test builds the runtime with `build_runtime(settings)` (the same wiring as the app),
starts a turn through `runtime.agent.start_turn` and follows the `LiveRun` to its end.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent.data_blocks import unwrap_data, wrap_tool_result
from agent.settings import Settings
from agent.tools.builtin import BUILTIN_TOOLS
from agent.tools.registry import ToolContext, ToolSpec
from runtime import Runtime, build_runtime
from storage import conversations as repo
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.fakes.runs import SENTINEL_KEY, collect, of_type, scripted_settings


def _runtime(settings: Settings, server: ScriptedOpenAIServer, *,
             tools: list[ToolSpec] | None = None, **overrides: Any) -> Runtime:
    return build_runtime(scripted_settings(settings, server.base_url, **overrides), tools=tools)


async def _turn(rt: Runtime, message: Any, conv_id: str = "conv-1", *,
                uicontext: Any = None, role: str = "viewer") -> list[dict[str, Any]]:
    identity, token = rt.issuer.mint_demo(role)
    live = await rt.agent.start_turn(message=message, conv_id=conv_id,
                                     user_id=identity.user_id, user_jwt=token,
                                     env_id="ss-dev", uicontext_str=uicontext)
    return await collect(live)


def _stored(rt: Runtime, conv_id: str = "conv-1") -> list[Any]:
    with rt.db.session() as session:
        return list(repo.list_messages(session=session, conversation_id=conv_id))


def _run_row(rt: Runtime, run_id: str) -> Any:
    with rt.db.session() as session:
        return repo.get_run(session=session, run_id=run_id)


# the provider path ---------------------------------------------------------------------------


async def test_text_and_tool_call_stream_through_the_loop(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    call = ScriptedCall("show_capabilities", "{}", fragments=2)
    server.reply_tool_calls(call, usage={"prompt_tokens": 100, "completion_tokens": 7,
                                         "total_tokens": 107})
    server.reply_text("You can list dashboards and more.", deltas=6,
                      usage={"prompt_tokens": 150, "completion_tokens": 9, "total_tokens": 159})

    events = await _turn(rt, "what can you do?")

    kinds = [event["type"] for event in events]
    assert kinds[0] == "run_started"
    assert kinds[-1] == "done"
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("token")
    assert kinds.index("token") < kinds.index("message") < kinds.index("done")
    assert set(kinds) == {"run_started", "tool_call", "tool_result", "token", "message", "done"}
    started = events[0]
    assert started["model"] == "openai/scripted"
    assert "show_capabilities" in started["tools"]
    tool_call = of_type(events, "tool_call")[0]
    assert (tool_call["tool"], tool_call["call_id"], tool_call["args"]) == (
        "show_capabilities", call.id, {})
    result = of_type(events, "tool_result")[0]
    assert result["call_id"] == call.id
    assert json.loads(result["summary"])["role"] == "viewer"
    assert "".join(e["text"] for e in of_type(events, "token")) == (
        "You can list dashboards and more.")
    assert of_type(events, "message")[0]["content"] == "You can list dashboards and more."
    done = events[-1]
    assert done["status"] == "completed" and done["error"] is None
    assert done["usage"] == {"prompt_tokens": 250, "completion_tokens": 16, "total_tokens": 266,
                             "cost_usd": None}  # "openai/scripted" has no price

    # what litellm really sent
    assert len(server.requests) == 2
    first, second = server.requests
    assert first.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert first.body["stream"] is True
    assert "show_capabilities" in first.tool_names
    assert first.messages[0]["role"] == "system"
    assert "<context>" in first.messages[0]["content"]
    assert first.messages[-1] == {"role": "user", "content": "what can you do?"}
    assistant, tool_message = second.messages[-2:]
    assert assistant["role"] == "assistant"
    assert [c["id"] for c in assistant["tool_calls"]] == [call.id]
    assert assistant["tool_calls"][0]["function"]["name"] == "show_capabilities"
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == call.id
    assert tool_message["content"] == wrap_tool_result("show_capabilities", result["summary"])

    stored = _stored(rt)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[-1].content == "You can list dashboards and more."
    run = _run_row(rt, done["run_id"])
    assert run.status == "completed"
    assert run.model == "openai/scripted"
    assert run.usage["total_tokens"] == 266
    # the live footnote's time is the one the stored answer keeps (a reload reads the same)
    assert done["duration_s"] == stored[-1].meta["run"]["duration_s"] is not None


async def test_tool_arguments_streamed_in_fragments_are_joined(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_tool_calls(
        ScriptedCall("list_environments", "{}", fragments=1),
        ScriptedCall("show_capabilities", "{ }", fragments=3),
        text="Checking both.",
    )
    server.reply_text("Done.")

    events = await _turn(rt, "environments and capabilities")

    calls = of_type(events, "tool_call")
    assert [c["tool"] for c in calls] == ["list_environments", "show_capabilities"]
    results = of_type(events, "tool_result")
    assert [r["call_id"] for r in results] == [c["call_id"] for c in calls]
    assert json.loads(results[0]["summary"])["count"] == 3
    second = server.requests[1].messages
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "tool"]
    assert second[-3]["content"] == "Checking both."
    assert events[-1]["status"] == "completed"


async def test_second_turn_carries_the_first_turns_history(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_text("First answer.")
    server.reply_text("Second answer.")

    await _turn(rt, "first question")
    events = await _turn(rt, "second question")

    assert events[-1]["status"] == "completed"
    sent = [(m["role"], m.get("content")) for m in server.requests[1].messages[1:]]
    assert sent == [("user", "first question"), ("assistant", "First answer."),
                    ("user", "second question")]


async def test_tool_not_offered_is_denied_and_answered(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    """A model asking for a tool it was not given gets a denial as the tool's result."""
    server.reply_tool_calls(ScriptedCall("delete_dashboard", '{"dashboard_id": 1}'))
    server.reply_text("I cannot do that here.")

    events = await _turn(rt, "delete dashboard 1")

    denied = of_type(events, "permission_denied")
    assert len(denied) == 1 and denied[0]["tool"] == "delete_dashboard"
    assert not of_type(events, "tool_call")
    tool_message = server.requests[1].messages[-1]
    assert tool_message["role"] == "tool"
    assert "Nothing was executed" in tool_message["content"]
    assert events[-1]["status"] == "completed"


async def test_invalid_tool_arguments_become_an_error_result(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_tool_calls(ScriptedCall("show_capabilities", '{"oops": '),
                            ScriptedCall("list_environments", '{"unexpected": 1}'))
    server.reply_text("Sorry.")

    events = await _turn(rt, "hi")

    errors = of_type(events, "tool_error")
    assert [e["tool"] for e in errors] == ["show_capabilities", "list_environments"]
    assert "not valid JSON" in errors[0]["error"]
    assert "Invalid arguments" in errors[1]["error"]
    sent = server.requests[1].messages
    assert [m["role"] for m in sent[-3:]] == ["assistant", "tool", "tool"]
    assert all(unwrap_data(m["content"]).startswith("Error:") for m in sent[-2:])
    assert events[-1]["status"] == "completed"


# limits -------------------------------------------------------------------------------------


async def test_step_limit_ends_the_run_with_a_valid_transcript(
    settings: Settings, server: ScriptedOpenAIServer
) -> None:
    rt = _runtime(settings, server, agent_max_steps=2)
    try:
        for _ in range(2):
            server.reply_tool_calls(ScriptedCall("show_capabilities"))
        events = await _turn(rt, "loop forever")
    finally:
        rt.close()

    assert len(server.requests) == 2
    assert [w["message"] for w in of_type(events, "warning")] == ["Step limit reached."]
    assert "2 steps" in of_type(events, "message")[0]["content"]
    assert events[-1]["status"] == "completed"
    stored = _stored(rt)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "tool",
                                        "assistant"]


async def test_empty_message_gets_a_prompt_and_no_model_call(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    for message in ("", "   \n ", None):
        events = await _turn(rt, message)
        assert [e["type"] for e in events] == ["run_started", "message", "done"]
        assert "Please type a question" in events[1]["content"]
        assert events[-1]["status"] == "completed"
    assert server.requests == []
    assert _stored(rt) == []


async def test_oversize_message_is_refused_and_not_stored(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    message = "select * from sales; " * 1000
    assert len(message) >= 20_000

    events = await _turn(rt, message)

    assert [e["type"] for e in events] == ["run_started", "message", "done"]
    assert "limit is 8,000" in events[1]["content"]
    assert server.requests == []
    assert _stored(rt) == []
    with rt.db.session() as session:
        conversation = repo.get_conversation(session=session, conversation_id="conv-1")
    assert conversation is not None
    assert "select" not in conversation.title


# failures -----------------------------------------------------------------------------------


async def test_server_error_fails_the_run_clearly_without_the_key(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    for _ in range(3):  # the OpenAI client retries a 500 itself
        server.reply_error(500)

    events = await _turn(rt, "hello")

    done = events[-1]
    assert done["type"] == "done" and done["status"] == "failed"
    assert "InternalServerError" in done["error"]
    assert "scripted server had an error" in done["error"]
    assert SENTINEL_KEY not in json.dumps(events)
    assert _run_row(rt, done["run_id"]).status == "failed"
    assert [m.role for m in _stored(rt)] == ["user"]


async def test_context_overflow_fails_the_run(rt: Runtime, server: ScriptedOpenAIServer) -> None:
    server.reply_context_overflow()

    events = await _turn(rt, "hello")

    assert events[-1]["status"] == "failed"
    assert "maximum context length" in events[-1]["error"]
    assert len(server.requests) == 1  # not retried: it would fail the same way


async def test_stream_cut_midway_fails_and_stores_no_half_reply(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_text("This answer will never be finished.", deltas=10, cut_after=5)

    events = await _turn(rt, "hello")

    assert events[-1]["status"] == "failed"
    assert events[-1]["error"]
    assert not of_type(events, "message")
    assert [m.role for m in _stored(rt)] == ["user"]


# a tool the test controls, to cancel a run while a call is pending ---------------------------


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _gated_tool(started: asyncio.Event, gate: asyncio.Event) -> ToolSpec:
    async def run(_: BaseModel, ctx: ToolContext) -> str:
        started.set()
        await gate.wait()
        return "slow result"

    return ToolSpec(name="slow_probe", description="Waits until the test opens the gate.",
                    args_schema=_NoArgs, risk="read", groups=frozenset({"always"}), run=run)


async def test_cancel_during_a_tool_call_answers_it_and_keeps_the_transcript_valid(
    settings: Settings, server: ScriptedOpenAIServer
) -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    rt = _runtime(settings, server, tools=[*BUILTIN_TOOLS, _gated_tool(started, gate)])
    try:
        fast, slow = ScriptedCall("show_capabilities"), ScriptedCall("slow_probe")
        server.reply_tool_calls(fast, slow, text="Working on it.")
        identity, token = rt.issuer.mint_demo("viewer")
        live = await rt.agent.start_turn(message="probe", conv_id="conv-1",
                                         user_id=identity.user_id, user_jwt=token,
                                         env_id=None, uicontext_str=None)
        await asyncio.wait_for(started.wait(), timeout=30)
        stopped = await rt.agent.stop(conv_id="conv-1", user_id=identity.user_id,
                                      user_jwt=token)
        assert stopped is live
        events = await collect(live)

        assert events[-1]["type"] == "done" and events[-1]["status"] == "cancelled"
        assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})
        stored = _stored(rt)
        assert [m.role for m in stored] == ["user", "assistant", "tool", "tool", "assistant"]
        assert stored[4].meta == {"status": "stopped"} and stored[4].content == ""
        assert stored[2].tool_call_id == fast.id and stored[2].meta["status"] == "done"
        assert stored[3].tool_call_id == slow.id and stored[3].meta["status"] == "cancelled"
        assert "Not executed" in stored[3].content
        assert _run_row(rt, live.run_id).status == "cancelled"

        server.reply_text("Fine.")
        events = await _turn(rt, "next")
        assert events[-1]["status"] == "completed"
        sent = server.requests[-1].messages
        calls = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls", [])]
        answered = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
        assert calls == answered == [fast.id, slow.id]
    finally:
        gate.set()
        rt.close()


async def test_cancel_mid_stream_keeps_completed_messages_and_the_streamed_part(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_text("A complete first answer.")
    await _turn(rt, "first")
    held = server.reply_text("A second answer that is cut short by Stop.", deltas=20,
                             hold_after=8)

    identity, token = rt.issuer.mint_demo("viewer")
    live = await rt.agent.start_turn(message="second", conv_id="conv-1",
                                     user_id=identity.user_id, user_jwt=token,
                                     env_id=None, uicontext_str=None)
    assert await held.until_reached()
    live.cancel()
    events = await collect(live)
    held.release.set()

    assert events[-1]["status"] == "cancelled"
    assert not of_type(events, "message")
    stored = _stored(rt)
    assert [(m.role, m.content) for m in stored[:3]] == [
        ("user", "first"), ("assistant", "A complete first answer."), ("user", "second")]
    # What streamed before the stop is kept, marked stopped (what the person saw).
    streamed = "".join(e["text"] for e in of_type(events, "token"))
    assert stored[3].role == "assistant" and stored[3].meta == {"status": "stopped"}
    assert stored[3].content == streamed  # (the coalescer may still hold every delta)
    assert "A second answer that is cut short by Stop.".startswith(streamed)
    assert len(stored) == 4
    assert _run_row(rt, live.run_id).status == "cancelled"

    server.reply_text("Third.")
    events = await _turn(rt, "third")
    assert events[-1]["status"] == "completed"
    roles = [m["role"] for m in server.requests[-1].messages]
    partial = ["assistant"] if streamed else []  # an empty reply is never sent
    assert roles == ["system", "user", "assistant", "user", *partial, "user"]


async def test_an_empty_reply_does_not_poison_the_next_prompt(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    """A model may answer with nothing at all; OpenAI rejects an assistant message whose
    content is null without tool calls, so such a reply must not reach the next prompt."""
    server.reply_text("")
    events = await _turn(rt, "say nothing")
    assert events[-1]["status"] == "completed"

    server.reply_text("Now I speak.")
    events = await _turn(rt, "and now?")

    assert events[-1]["status"] == "completed"
    for message in server.requests[-1].messages:
        if message["role"] == "assistant":
            assert isinstance(message.get("content"), str) or message.get("tool_calls")
