"""Side questions end to end through LiteLLMGateway and a scripted OpenAI server on loopback."""

from __future__ import annotations

import pytest

from side_questions.errors import Conflict, InvalidQuestion, NotFound
from tests.side_questions.conftest import SYSTEM_PROMPT, finished, seed_parent


async def test_answer_streams_from_snapshot_without_tools(side, server) -> None:  # type: ignore[no-untyped-def]
    server.reply_text("Dashboard 42 is Sales.", deltas=4,
                      usage={"prompt_tokens": 50, "completion_tokens": 6, "total_tokens": 56})
    result = await side.submit(parent_id="conv-1", question="Which dashboard?",
                               client_request_id="c1")
    assert result.created and result.request.status == "running"
    final = await finished(side, result.request.id)
    assert final.status == "completed"
    assert final.answer == "Dashboard 42 is Sales."
    assert final.usage["total_tokens"] == 56 and final.usage["calls"] == 1
    assert final.context_info["replayed"] == 0 and final.context_info["stage"] == "done"
    sent = server.side_requests()[0].messages
    assert sent[0]["role"] == "system" and SYSTEM_PROMPT in sent[0]["content"]
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[-1]["content"] == "Which dashboard?"
    page = await side.history(parent_id="conv-1")
    assert [i.id for i in page.items] == [result.request.id] and page.running is None
    assert page.snapshot["run_id"] == "run-1" and page.next_cursor == 0


async def test_returned_tool_call_is_ignored(side, server) -> None:  # type: ignore[no-untyped-def]
    from tests.fakes.openai_server import ScriptedCall

    server.reply_tool_calls(ScriptedCall("get_dashboard", '{"id": 1}'))
    result = await side.submit(parent_id="conv-1", question="q?", client_request_id="t1")
    final = await finished(side, result.request.id)
    assert final.status == "completed" and "never run tools" in final.answer
    assert len(server.requests) == 1


async def test_idempotent_submit_and_conflicts(side, server) -> None:  # type: ignore[no-untyped-def]
    held = server.reply_text("slow answer", deltas=3, hold_after=2)
    first = await side.submit(parent_id="conv-1", question="Q1", client_request_id="same")
    again = await side.submit(parent_id="conv-1", question="Q1", client_request_id="same")
    assert not again.created and again.request.id == first.request.id
    with pytest.raises(Conflict) as reused:
        await side.submit(parent_id="conv-1", question="other", client_request_id="same")
    assert reused.value.kind == "client_request_id_reused"
    with pytest.raises(Conflict) as busy:
        await side.submit(parent_id="conv-1", question="Q2", client_request_id="other")
    assert busy.value.kind == "busy"
    held.release.set()
    assert (await finished(side, first.request.id)).status == "completed"


async def test_no_snapshot_and_changed_configuration(side_factory, side, db, server) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Conflict) as missing:
        await side.submit(parent_id="conv-none", question="Q", client_request_id="a")
    assert missing.value.kind == "no_snapshot"
    moved = side_factory(agent_api_base="http://127.0.0.1:9/v1")
    with pytest.raises(Conflict) as changed:
        await moved.submit(parent_id="conv-1", question="Q", client_request_id="b")
    assert changed.value.kind == "config_changed"
    other_model = side_factory(agent_model="openai/another")
    with pytest.raises(Conflict):
        await other_model.submit(parent_id="conv-1", question="Q", client_request_id="c")
    assert server.requests == []


async def test_invalid_questions(side) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidQuestion) as empty:
        await side.submit(parent_id="conv-1", question="   ")
    assert empty.value.kind == "empty"
    with pytest.raises(InvalidQuestion) as long:
        await side.submit(parent_id="conv-1", question="x" * 4001)
    assert long.value.kind == "too_long"
    with pytest.raises(InvalidQuestion):
        await side.submit(parent_id="conv-1", question="ok", client_request_id="bad id!")
    with pytest.raises(NotFound):
        await side.get("nope")


async def test_stop_cancels_only_that_request(side_factory, db, server) -> None:  # type: ignore[no-untyped-def]
    service = side_factory()
    seed_parent(db, service.settings, "conv-a")
    seed_parent(db, service.settings, "conv-b")
    a = server.reply_text("aaaa bbbb", deltas=2, hold_after=2)
    first = await service.submit(parent_id="conv-a", question="A?", client_request_id="a")
    await a.until_reached()
    b = server.reply_text("answer b", deltas=2, hold_after=2)
    second = await service.submit(parent_id="conv-b", question="B?", client_request_id="b")
    await b.until_reached()
    stopped = await service.cancel(first.request.id)
    assert stopped.status == "cancelled" and stopped.answer == "aaaa "
    b.release.set()
    assert (await finished(service, second.request.id)).status == "completed"
    stored = await service.get(first.request.id)
    assert stored.status == "cancelled" and stored.answer == "aaaa "
    a.release.set()


async def test_follow_sequences_increase(side, server) -> None:  # type: ignore[no-untyped-def]
    server.reply_text("one two three four five", deltas=5, delay_s=0.02)
    result = await side.submit(parent_id="conv-1", question="count", client_request_id="f")
    sequences = [u.sequence async for u in side.follow(result.request.id)]
    assert sequences == sorted(set(sequences)) and len(sequences) >= 2
    # After the end the state is read from the database, with its final sequence.
    replay = [u async for u in side.follow(result.request.id)]
    assert len(replay) == 1 and replay[0].request.status == "completed"
    assert replay[0].sequence >= sequences[-1] - 1
