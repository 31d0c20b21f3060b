"""A queued turn is admitted in a worker thread after the run before it ends (issue 16,
item 3): meanwhile the conversation stays busy, a follower waits for the launch and moves
on to it, Stop cancels that turn cleanly, a refused turn is reported and the next one goes
on, and shutdown leaves no half-started run.

The scripted model holds the first answer mid-stream (`hold_after`) so the later sends
queue behind it, and a gate holds each queued turn's admission in its worker thread until
the test lets it go: every "while it is admitted" is a state the test waits for."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlmodel import select

from agent.errors import ConversationAccessError
from agent.live_run import LiveRun
from agent.turn_queue import QueuedTurn
from runtime import Runtime
from storage import conversations as repo
from storage.models import Run
from storage.run_leases import RunLease
from tests.fakes.openai_server import ScriptedOpenAIServer, ScriptedReply

WAIT_S = 60.0


class Gate:
    """Stands in for `Admission.turn`: each call waits in its worker thread until `let_go`;
    a text in `refuse` is then refused as a lost owner would be."""

    def __init__(self, rt: Runtime, monkeypatch: pytest.MonkeyPatch,
                 refuse: frozenset[str] = frozenset()) -> None:
        self.admit = rt.agent.admission.turn
        self.refuse = refuse
        self.entered: queue.Queue[str] = queue.Queue()
        self.go = threading.Semaphore(0)
        monkeypatch.setattr(rt.agent.admission, "turn", self)

    def __call__(self, identity: Any, text: str, conv_id: str, *args: Any) -> Any:
        self.entered.put(text)
        assert self.go.acquire(timeout=WAIT_S)
        if text in self.refuse:
            raise ConversationAccessError()
        return self.admit(identity, text, conv_id, *args)

    async def reached(self) -> str:
        """The text of the next turn whose admission waits at the gate."""
        return await asyncio.to_thread(self.entered.get, True, WAIT_S)

    def let_go(self) -> None:
        self.go.release()


async def _send(rt: Runtime, text: str, conv_id: str) -> LiveRun | QueuedTurn:
    identity, token = rt.issuer.mint_demo("admin")
    return await rt.agent.submit_turn(message=text, conv_id=conv_id, user_id=identity.user_id,
                                      user_jwt=token, env_id="ss-dev", uicontext_str=None)


async def _first_and_queued(rt: Runtime, server: ScriptedOpenAIServer, conv_id: str,
                            *queued: str) -> tuple[LiveRun, ScriptedReply]:
    """A first run held mid-answer, with `queued` sent behind it."""
    held = server.reply_text("First answer.", deltas=2, hold_after=1)
    first = await _send(rt, "first", conv_id)
    assert isinstance(first, LiveRun)
    assert await held.until_reached()
    for text in queued:
        assert isinstance(await _send(rt, text, conv_id), QueuedTurn)
    return first, held


async def _until(check: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not check():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(poll(), WAIT_S)


def _follower(rt: Runtime, conv_id: str) -> tuple[asyncio.Task[None], list[LiveRun]]:
    seen: list[LiveRun] = []

    async def follow() -> None:
        async for live in rt.agent.runs.follow(conv_id):
            if not seen or seen[-1] is not live:
                seen.append(live)
    return asyncio.create_task(follow()), seen


def _users(rt: Runtime, conv_id: str) -> list[str]:
    with rt.db.session() as session:
        return [row.content or "" for row in repo.list_messages(
            session=session, conversation_id=conv_id) if row.role == "user"]


def _runs_and_leases(rt: Runtime, conv_id: str) -> tuple[list[str], list[RunLease]]:
    with rt.db.session() as session:
        runs = session.exec(select(Run).where(Run.conversation_id == conv_id)
                            .order_by(Run.started_at)).all()
        leases = session.exec(select(RunLease)
                              .where(RunLease.conversation_id == conv_id)).all()
        return [run.status for run in runs], list(leases)


async def test_a_follower_waits_through_each_admission_and_sees_every_queued_run(
        rt: Runtime, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    first, held = await _first_and_queued(rt, server, "qa-follow", "second", "third")
    server.reply_text("Second answer.")
    server.reply_text("Third answer.")
    gate = Gate(rt, monkeypatch)
    follower, seen = _follower(rt, "qa-follow")
    held.release.set()

    for text in ("second", "third"):
        assert await gate.reached() == text
        before = rt.agent.live_run("qa-follow")
        assert before is not None and before.finished.is_set()
        assert rt.agent.runs.busy("qa-follow"), "never idle while its next turn is admitted"
        assert not follower.done(), "the follower waits for the launch"
        gate.let_go()

    await asyncio.wait_for(follower, WAIT_S)
    assert seen[0] is first and len(seen) == 3
    assert [live.status for live in seen] == ["completed"] * 3
    assert _users(rt, "qa-follow") == ["first", "second", "third"]
    assert _runs_and_leases(rt, "qa-follow") == (["completed"] * 3, [])


async def test_stop_while_a_queued_turn_is_admitted_stops_that_turn(
        rt: Runtime, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its message is stored by then: it starts, is cancelled at once, and Stop returns it
    (the page shows it "Stopped"); nothing queued after it starts, no lease is left."""
    first, held = await _first_and_queued(rt, server, "qa-stop", "second", "third")
    gate = Gate(rt, monkeypatch)
    held.release.set()
    assert await gate.reached() == "second"

    identity, token = rt.issuer.mint_demo("admin")
    stop = asyncio.create_task(rt.agent.stop(conv_id="qa-stop", user_id=identity.user_id,
                                             user_jwt=token))
    await _until(lambda: not rt.agent.queued("qa-stop"))  # Stop took the queue
    assert not stop.done(), "Stop waits for the turn being admitted"
    gate.let_go()
    stopped = await asyncio.wait_for(stop, WAIT_S)

    assert stopped is not None and stopped is not first
    assert stopped.status == "cancelled" and stopped.request.user_message == "second"
    assert rt.agent.live_run("qa-stop") is stopped and not rt.agent.runs.busy("qa-stop")
    assert gate.entered.empty(), "nothing queued after it was admitted"
    assert _users(rt, "qa-stop") == ["first", "second"]
    assert _runs_and_leases(rt, "qa-stop") == (["completed", "cancelled"], [])


async def test_a_refused_queued_turn_is_reported_and_the_next_one_starts(
        rt: Runtime, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    first, held = await _first_and_queued(rt, server, "qa-refused", "second", "third")
    server.reply_text("Third answer.")
    gate = Gate(rt, monkeypatch, refuse=frozenset({"second"}))
    follower, seen = _follower(rt, "qa-refused")
    held.release.set()
    assert await gate.reached() == "second"
    gate.let_go()
    assert await gate.reached() == "third"
    assert rt.agent.runs.busy("qa-refused") and not follower.done()
    gate.let_go()

    await asyncio.wait_for(follower, WAIT_S)
    assert seen[0] is first and len(seen) == 2 and seen[1].request.user_message == "third"
    assert seen[1].status == "completed"
    assert [(turn.text, reason) for turn, reason in
            rt.agent.runs.queue.take_refused("qa-refused")] == [
        ("second", str(ConversationAccessError()))]
    assert _users(rt, "qa-refused") == ["first", "third"]
    assert _runs_and_leases(rt, "qa-refused") == (["completed", "completed"], [])


async def test_a_follower_is_shown_the_refusal_of_the_last_queued_turn(
        rt: Runtime, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing starts after the refused turn: the follower is given the run before it once
    more, with the refusal waiting for it (the page's toast), then ends."""
    first, held = await _first_and_queued(rt, server, "qa-last", "second")
    gate = Gate(rt, monkeypatch, refuse=frozenset({"second"}))
    refused_when_seen: list[bool] = []

    async def follow() -> None:
        async for _ in rt.agent.runs.follow("qa-last"):
            refused_when_seen.append(rt.agent.runs.queue.has_refused("qa-last"))
    follower = asyncio.create_task(follow())
    held.release.set()
    assert await gate.reached() == "second"
    gate.let_go()
    await asyncio.wait_for(follower, WAIT_S)

    assert refused_when_seen[-1] is True and not any(refused_when_seen[:-1])
    assert rt.agent.live_run("qa-last") is first and not rt.agent.runs.busy("qa-last")


async def test_shutdown_while_a_queued_turn_is_admitted_leaves_no_half_started_run(
        rt: Runtime, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    first, held = await _first_and_queued(rt, server, "qa-close", "second")
    gate = Gate(rt, monkeypatch)
    held.release.set()
    assert await gate.reached() == "second"
    closing = asyncio.create_task(rt.agent.aclose(wait_s=WAIT_S))
    await _until(lambda: rt.agent.runs.closing)
    assert not closing.done(), "shutdown waits for the turn being admitted"
    gate.let_go()
    await asyncio.wait_for(closing, WAIT_S)

    last = rt.agent.live_run("qa-close")
    assert last is not None and last is not first
    assert last.finished.is_set() and last.status == "cancelled"
    assert _runs_and_leases(rt, "qa-close") == (["completed", "cancelled"], [])
