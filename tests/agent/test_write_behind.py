"""A step's messages are written behind the next model call (agent/run_store.py): the call
does not wait for the write, the prompt is the one a read would give, and the write still
lands in order, once, before the run's end, also when it fails or the run is stopped."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from agent.history import to_model_messages
from agent.loop import RunRequest
from agent.run_store import RunStore
from runtime import Runtime
from storage import conversations as repo
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.fakes.runs import collect, of_type
from tests.waits import EVENT_WAIT_S


@contextmanager
def results_write_held(rt: Runtime, until: threading.Event | None = None,
                       fail: bool = False) -> Iterator[list[bool]]:
    """Hold the write of each tool result (in its worker thread, inside its transaction)
    until `until` is set; yields, per held write, whether it was set in time. With `fail`,
    the first such write then fails instead."""
    waited: list[bool] = []

    def before(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.startswith("INSERT INTO messages") and "'tool'" in repr(parameters):
            waited.append(until.wait(EVENT_WAIT_S) if until is not None else True)
            if fail and len(waited) == 1:
                raise RuntimeError("the database refused the write")

    event.listen(rt.db.engine, "before_cursor_execute", before)
    try:
        yield waited
    finally:
        event.remove(rt.db.engine, "before_cursor_execute", before)


def when_results_are_sent(server: ScriptedOpenAIServer) -> threading.Event:
    """Set when the model is sent a prompt that holds a tool result."""
    sent = threading.Event()

    def responder(body: dict[str, Any]) -> None:
        if any(message.get("role") == "tool" for message in body.get("messages") or []):
            sent.set()

    server.respond_with(responder)
    return sent


async def _turn(rt: Runtime, message: str) -> list[dict[str, Any]]:
    identity, token = rt.issuer.mint_demo("viewer")
    live = await rt.agent.start_turn(message=message, conv_id="conv-1",
                                     user_id=identity.user_id, user_jwt=token,
                                     env_id="ss-dev", uicontext_str=None)
    return await collect(live, timeout_s=2 * EVENT_WAIT_S)


def _as_sent(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As litellm sends them: a call's empty content is left out."""
    return [{key: value for key, value in message.items() if value is not None}
            for message in messages]


def _stored(rt: Runtime) -> list[Any]:
    with rt.db.read() as session:
        return repo.list_messages(session=session, conversation_id="conv-1")


def _run_status(rt: Runtime) -> str:
    with rt.db.read() as session:
        return repo.get_run(session=session,
                            run_id=_stored(rt)[-1].run_id).status  # type: ignore[union-attr]


async def test_the_next_model_call_does_not_wait_for_the_steps_write(
        rt: Runtime, server: ScriptedOpenAIServer) -> None:
    """Each tool result's write is held until the model has been sent the prompt with that
    result: before, the step wrote and read its prompt back first, so the model was never
    sent it while the write waited (ten runs at once on SQLite: 23 ms median, 238 ms at
    most, traced). The prompts are the stored transcript's, step by step."""
    sent = when_results_are_sent(server)
    first, second = ScriptedCall("show_capabilities"), ScriptedCall("list_environments")
    server.reply_tool_calls(first)
    server.reply_tool_calls(second)
    server.reply_text("Here is what I can do, in two environments.", deltas=4)
    with results_write_held(rt, until=sent) as waited:
        events = await _turn(rt, "what can you do, and where?")
    assert events[-1]["status"] == "completed"
    assert waited == [True, True]  # each write was still held when its prompt went out
    stored = _stored(rt)
    assert [(m.role, m.tool_call_id) for m in stored] == [
        ("user", None), ("assistant", None), ("tool", first.id),
        ("assistant", None), ("tool", second.id), ("assistant", None)]
    assert stored[-1].content == "Here is what I can do, in two environments."
    # what the model was sent at each step is what a read of the store gives
    for request, known in zip(server.requests, (1, 3, 5), strict=True):
        assert request.messages[1:] == _as_sent(to_model_messages(stored[:known]))
    assert _run_status(rt) == "completed"


async def test_a_write_behind_that_fails_ends_the_run_failed_with_every_message_once(
        rt: Runtime, server: ScriptedOpenAIServer) -> None:
    """The write's error comes out where the run next relies on the store (its end here):
    the run is recorded failed, and the messages that write held are written with the end,
    once each."""
    call = ScriptedCall("show_capabilities")
    server.reply_tool_calls(call)
    server.reply_text("Here is what I can do.")
    with results_write_held(rt, fail=True) as failed:
        events = await _turn(rt, "what can you do?")
    assert failed == [True, True]  # behind the answer's call (failed), then with the end
    assert events[-1]["status"] == "failed"
    assert [(m.role, m.tool_call_id) for m in _stored(rt)] == [
        ("user", None), ("assistant", None), ("tool", call.id), ("assistant", None)]
    assert _run_status(rt) == "failed"


async def test_stopping_a_run_while_its_write_is_behind_writes_each_message_once(
        rt: Runtime, server: ScriptedOpenAIServer) -> None:
    """Stopped while the step's write is still held and the answer streams: the stop's
    records wait for that write, so the transcript is the call, its result and the stopped
    answer, each once, and the run is recorded cancelled after them."""
    sent = when_results_are_sent(server)
    release = threading.Event()
    call = ScriptedCall("show_capabilities")
    server.reply_tool_calls(call)
    held = server.reply_text("An answer that is cut short by Stop.", deltas=10, hold_after=3)
    identity, token = rt.issuer.mint_demo("viewer")
    with results_write_held(rt, until=release) as waited:
        live = await rt.agent.start_turn(message="what can you do?", conv_id="conv-1",
                                         user_id=identity.user_id, user_jwt=token,
                                         env_id="ss-dev", uicontext_str=None)
        assert await held.until_reached()
        assert sent.is_set() and not release.is_set()
        live.cancel()
        release.set()
        events = await collect(live, timeout_s=EVENT_WAIT_S)
    held.release.set()
    assert waited == [True]
    assert events[-1]["status"] == "cancelled"
    stored = _stored(rt)
    assert [(m.role, m.tool_call_id) for m in stored] == [
        ("user", None), ("assistant", None), ("tool", call.id), ("assistant", None)]
    streamed = "".join(e["text"] for e in of_type(events, "token"))
    assert stored[-1].meta == {"status": "stopped"} and stored[-1].content == streamed
    assert _run_status(rt) == "cancelled"


async def test_a_lease_keeps_no_answer_text_while_the_step_before_it_is_written(
        rt: Runtime, server: ScriptedOpenAIServer) -> None:
    """The heartbeat stores the answer streamed so far with the lease, for the records of a
    process that dies (agent/run_leases.py). While the step before the answer is still being
    written it stores none: a crash then would leave an answer built on a tool result the
    transcript does not hold."""
    release = threading.Event()
    server.reply_tool_calls(ScriptedCall("show_capabilities"))
    # paced, so the in-process gateway's coalescer (50 ms) lets words out before the hold
    held = server.reply_text("Here is what I can do, in a few more words than one.",
                             deltas=20, hold_after=8, delay_s=0.02)
    identity, token = rt.issuer.mint_demo("viewer")
    with results_write_held(rt, until=release):
        live = await rt.agent.start_turn(message="what can you do?", conv_id="conv-1",
                                         user_id=identity.user_id, user_jwt=token,
                                         env_id="ss-dev", uicontext_str=None)
        try:
            assert await held.until_reached()
            await asyncio.wait_for(_first_token(live), EVENT_WAIT_S)
            assert live.streamed_text() == ""  # the answer has begun; its step is not stored
        finally:
            release.set()
            held.release.set()
        events = await collect(live, timeout_s=EVENT_WAIT_S)
    assert events[-1]["status"] == "completed"


async def _first_token(live: Any) -> None:
    async for events in live.follow():
        if of_type(events, "token"):
            return



def _run_store(rt: Runtime) -> RunStore:
    """A run's store, of a run stored as started (as its admission leaves it)."""
    identity, _ = rt.issuer.mint_demo("viewer")
    with rt.db.session() as session:
        repo.create_conversation(session=session, owner_id=identity.user_id,
                                 conversation_id="conv-1")
        repo.start_run(session=session, run_id="run-1", conversation_id="conv-1",
                       user_id=identity.user_id, model="scripted", env_id=None)
    return RunStore(rt.db, RunRequest(
        run_id="run-1", conversation_id="conv-1", identity=identity, user_message=None,
        env_id=None, env_tier=None, context=None, tools=[]))


async def test_a_settled_write_behind_says_the_run_has_nothing_in_flight(rt: Runtime) -> None:
    """`writing_behind` (what keeps the lease's answer text empty) is true from the start of
    a write behind until it has landed, also when something waits for it (`settle`)."""
    store = _run_store(rt)
    request = store.request
    store.store(role="user", content="one")
    store.write_behind()
    assert request.writing_behind
    store.store(role="assistant", content="two")
    store.write_behind()  # after the first: in order
    await store.settle()
    assert not request.writing_behind and not store.pending
    assert [(m.role, m.content) for m in _stored(rt)] == [("user", "one"), ("assistant", "two")]


async def test_a_run_stopped_again_while_its_end_waits_for_a_write_behind_still_ends(
        rt: Runtime) -> None:
    """Stop, then shutdown: a second cancellation that reaches the run's end while it waits
    for a write behind waits for that write, writes the end all the same and is then
    raised (as `storage.off_loop` does for any database call), so the run is not left
    `running` with its messages still landing."""
    release = threading.Event()
    store = _run_store(rt)
    with results_write_held(rt, until=release):
        store.store(role="tool", tool_call_id="c1", tool_name="show_capabilities",
                    content="caps")
        store.write_behind()
        ending = asyncio.ensure_future(store.finish("cancelled", None, {}))
        await asyncio.sleep(0)  # one step: `finish` runs to its wait for the write
        ending.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await ending
    assert [(m.role, m.tool_call_id) for m in _stored(rt)] == [("tool", "c1")]
    with rt.db.read() as session:
        assert repo.get_run(session=session, run_id="run-1").status == "cancelled"  # type: ignore[union-attr]
