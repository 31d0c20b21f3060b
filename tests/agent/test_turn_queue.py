"""Turns sent while a conversation's run is live wait in order and start when it ends; a
reader going away never cancels a run; Stop hands queued turns back (issue 11, items 1-2).

Driven through the service with the offline model slowed per token, so "while it runs" is a
state the test waits for (a live run), never a sleep."""

from __future__ import annotations

import asyncio

import pytest
from sqlmodel import select

from agent.run_leases import ConversationBusy
from agent.turn_queue import MAX_QUEUED_TURNS, QueuedTurn, QueueFull
from runtime import Runtime, build_runtime
from storage import conversations as repo
from storage.models import Run
from tests.fakes.runs import collect


@pytest.fixture
def slow_runtime(settings):  # type: ignore[no-untyped-def]
    rt = build_runtime(settings.model_copy(update={"offline_token_delay_ms": 5}))
    yield rt
    rt.close()


async def _submit(rt: Runtime, message: str, conv_id: str, role: str = "editor"):  # type: ignore[no-untyped-def]
    identity, token = rt.issuer.mint_demo(role)
    return await rt.agent.submit_turn(message=message, conv_id=conv_id,
                                      user_id=identity.user_id, user_jwt=token,
                                      env_id="ss-dev", uicontext_str=None)


async def _wait_idle(rt: Runtime, conv_id: str, timeout_s: float = 60) -> None:
    async def idle() -> None:
        while rt.agent.runs.busy(conv_id) or rt.agent.queued(conv_id):
            live = rt.agent.live_run(conv_id)
            if live is not None:
                await collect(live)
            await asyncio.sleep(0)
    await asyncio.wait_for(idle(), timeout_s)


def _user_and_answers(rt: Runtime, conv_id: str) -> list[tuple[str, str]]:
    with rt.db.session() as session:
        rows = repo.list_messages(session=session, conversation_id=conv_id)
        return [(row.role, row.content or "") for row in rows
                if row.role == "user" or (row.role == "assistant" and row.content)]


async def test_turns_sent_during_a_run_run_after_it_in_order(slow_runtime: Runtime) -> None:
    first = await _submit(slow_runtime, "what can you do?", "q-order")
    second = await _submit(slow_runtime, "list the dashboards", "q-order")
    third = await _submit(slow_runtime, "what can you do?", "q-order")

    assert not isinstance(first, QueuedTurn)
    assert isinstance(second, QueuedTurn) and isinstance(third, QueuedTurn)
    assert [t.text for t in slow_runtime.agent.queued("q-order")] == [
        "list the dashboards", "what can you do?"]
    await _wait_idle(slow_runtime, "q-order")

    said = _user_and_answers(slow_runtime, "q-order")
    users = [text for role, text in said if role == "user"]
    assert users == ["what can you do?", "list the dashboards", "what can you do?"]
    roles = [role for role, _ in said]
    assert roles == ["user", "assistant"] * 3  # each answered before the next began
    with slow_runtime.db.session() as session:
        statuses = [run.status for run in session.exec(
            select(Run).where(Run.conversation_id == "q-order").order_by(Run.started_at))]
    assert statuses == ["completed"] * 3


async def test_two_sends_at_once_to_an_idle_conversation_run_one_after_the_other(
        slow_runtime: Runtime) -> None:
    """A turn is admitted in a worker thread (issue 16, item 3): the conversation is held
    from the first check to the launch, so a second send in that window queues behind it.
    Unheld, both passed the idle check and the second hit the first's lease: refused."""
    first, second = await asyncio.gather(
        _submit(slow_runtime, "what can you do?", "q-together"),
        _submit(slow_runtime, "list the dashboards", "q-together"))

    assert not isinstance(first, QueuedTurn) and isinstance(second, QueuedTurn)
    await _wait_idle(slow_runtime, "q-together")
    users = [text for role, text in _user_and_answers(slow_runtime, "q-together")
             if role == "user"]
    assert users == ["what can you do?", "list the dashboards"]


async def test_a_reader_going_away_leaves_the_run_running(slow_runtime: Runtime) -> None:
    live = await _submit(slow_runtime, "what can you do?", "q-reader")
    reader = slow_runtime.agent.runs.follow("q-reader")
    await reader.__anext__()  # reading …
    await reader.aclose()     # … and gone (a reload, a closed tab)

    assert not live.finished.is_set()
    events = await collect(live)
    assert events[-1]["status"] == "completed"


async def test_a_follower_moves_on_to_each_queued_turn(slow_runtime: Runtime) -> None:
    first = await _submit(slow_runtime, "what can you do?", "q-follow")
    await _submit(slow_runtime, "list the dashboards", "q-follow")
    seen: list[str] = []
    async for live in slow_runtime.agent.runs.follow("q-follow"):
        if not seen or seen[-1] != live.run_id:
            seen.append(live.run_id)
    assert len(seen) == 2 and seen[0] == first.run_id
    assert slow_runtime.agent.live_run("q-follow").status == "completed"


async def test_the_queue_is_bounded_and_a_full_queue_changes_nothing(
        slow_runtime: Runtime) -> None:
    await _submit(slow_runtime, "what can you do?", "q-full")
    for _ in range(MAX_QUEUED_TURNS):
        await _submit(slow_runtime, "what can you do?", "q-full")
    with pytest.raises(QueueFull, match="already waiting"):
        await _submit(slow_runtime, "one too many", "q-full")
    assert len(slow_runtime.agent.queued("q-full")) == MAX_QUEUED_TURNS
    assert "one too many" not in [t.text for t in slow_runtime.agent.queued("q-full")]
    # Stop hands the queued turns back, so the test does not wait out six slowed answers.
    identity, token = slow_runtime.issuer.mint_demo("editor")
    await slow_runtime.agent.stop(conv_id="q-full", user_id=identity.user_id, user_jwt=token)
    assert slow_runtime.agent.queued("q-full") == []


async def test_stop_starts_nothing_that_was_queued(slow_runtime: Runtime) -> None:
    identity, token = slow_runtime.issuer.mint_demo("editor")
    live = await _submit(slow_runtime, "what can you do?", "q-stop")
    await _submit(slow_runtime, "list the dashboards", "q-stop")

    stopped = await slow_runtime.agent.stop(conv_id="q-stop", user_id=identity.user_id,
                                            user_jwt=token)
    assert stopped is live and live.status == "cancelled"
    assert slow_runtime.agent.queued("q-stop") == []
    assert slow_runtime.agent.live_run("q-stop") is live  # nothing else started
    assert [t for r, t in _user_and_answers(slow_runtime, "q-stop") if r == "user"] == [
        "what can you do?"]


async def test_start_turn_still_refuses_a_busy_conversation(slow_runtime: Runtime) -> None:
    """Programs (`/agent_handler`) get the clear busy error, never a silent drop."""
    live = await _submit(slow_runtime, "what can you do?", "q-api")
    identity, token = slow_runtime.issuer.mint_demo("editor")
    with pytest.raises(ConversationBusy):
        await slow_runtime.agent.start_turn(message="hi", conv_id="q-api",
                                            user_id=identity.user_id, user_jwt=token,
                                            env_id=None, uicontext_str=None)
    await collect(live)


async def test_another_persons_turn_is_not_queued_on_my_conversation(
        slow_runtime: Runtime) -> None:
    from agent.errors import ConversationAccessError

    live = await _submit(slow_runtime, "what can you do?", "q-mine", role="editor")
    with pytest.raises(ConversationAccessError):
        await _submit(slow_runtime, "sneak in", "q-mine", role="viewer")
    assert slow_runtime.agent.queued("q-mine") == []
    await collect(live)


async def test_a_queued_turn_waits_for_an_open_approval(slow_runtime: Runtime) -> None:
    """A run that paused for approval does not start what was queued behind it: the queued
    message would close the approval before the person saw it."""
    live = await _submit(slow_runtime, "publish dashboard 1", "q-approve")
    await _submit(slow_runtime, "what can you do?", "q-approve")
    events = await collect(live)
    assert events[-1]["status"] == "awaiting_confirmation"
    assert [t.text for t in slow_runtime.agent.queued("q-approve")] == ["what can you do?"]
    assert slow_runtime.agent.live_run("q-approve") is live


async def test_a_conversation_never_looks_idle_while_its_next_turn_is_admitted(
        slow_runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """A queued turn is popped and then admitted (owner, lease, its message stored) before its
    run is live. Unheld, the conversation looked idle in that window (no live run, nothing
    queued), so a reader on another thread saw it idle with the turn's message not yet stored
    (the stressed CI's queued-journey failure: 'list the dashboards' missing)."""
    seen: list[tuple[str, bool, int]] = []
    admit = slow_runtime.agent.admission.turn

    def spied(identity, text, conv_id, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((text, slow_runtime.agent.runs.busy(conv_id),
                     len(slow_runtime.agent.queued(conv_id))))
        return admit(identity, text, conv_id, *args, **kwargs)

    monkeypatch.setattr(slow_runtime.agent.admission, "turn", spied)
    await _submit(slow_runtime, "what can you do?", "q-gap")
    await _submit(slow_runtime, "list the dashboards", "q-gap")
    await _wait_idle(slow_runtime, "q-gap")

    assert [text for text, _, _ in seen] == ["what can you do?", "list the dashboards"]
    queued_start = seen[1]
    assert queued_start[1:] == (True, 0), "popped from the queue, and busy until it is live"
