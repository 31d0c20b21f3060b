"""No database call on the event loop during a turn (issue 16, item 3).

A synchronous SQLAlchemy session opened on the event loop's thread stalls Gradio and every
other stream of the process for as long as the database takes. A spy on the one place
sessions are opened (`Database._session`, the real one still runs) records each session
opened on a thread that is running an event loop, with the task it ran in: a turn that
reads, one that asks for a write, its approval and a Stop must open none, neither in the
run's task (`run-…`: every model step, tool call, audit row, approval card and the run's
end) nor in admitting the turn (owner, lease, open approval, decision), nor a queued turn's
start, which is admitted in a worker thread after its predecessor's end (`RunHost.start_next`).
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent.turn_queue import QueuedTurn
from runtime import Runtime
from storage import Database
from tests.agent.guardrails_support import call, confirm, turn
from tests.fakes.openai_server import ScriptedOpenAIServer
from tests.fakes.runs import collect, of_type


@dataclass(frozen=True)
class OnLoop:
    task: str  # the asyncio task's name
    opener: str  # the app function that opened the session
    where: str  # a short stack, for the failure message


@pytest.fixture
def on_loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[OnLoop]]:
    """Each session opened on an event loop's thread."""
    seen: list[OnLoop] = []
    real = Database._session

    def spied(self: Database, *args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a worker thread: fine
            return real(self, *args, **kwargs)
        frames = [f for f in reversed(traceback.extract_stack(limit=12)[:-1])
                  if "/tests/" not in f.filename and "contextlib" not in f.filename
                  and not f.filename.endswith("storage/db.py")]
        task = asyncio.current_task()
        seen.append(OnLoop(task=task.get_name() if task else "", opener=frames[0].name,
                           where=" <- ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} "
                                             f"{f.name}" for f in frames[:5])))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Database, "_session", spied)
    yield seen


def _check(seen: list[OnLoop]) -> None:
    in_runs = [entry.where for entry in seen if entry.task.startswith("run-")]
    assert in_runs == [], "a run opened a database session on the event loop"
    assert [entry.where for entry in seen] == [], "a turn's admission did"


async def test_a_read_turn_opens_no_session_on_the_event_loop(
        rt: Runtime, server: ScriptedOpenAIServer, on_loop: list[OnLoop]) -> None:
    server.reply_tool_calls(call("list_dashboards"), text="Looking.")
    server.reply_text("There are dashboards.")
    events = await turn(rt, "list the dashboards", conv_id="conv-loop-read")
    assert events[-1]["status"] == "completed", events[-1]
    assert of_type(events, "tool_result")
    _check(on_loop)


async def test_a_write_its_approval_and_a_stop_open_no_session_on_the_event_loop(
        rt: Runtime, server: ScriptedOpenAIServer, on_loop: list[OnLoop]) -> None:
    server.reply_tool_calls(call("update_dashboard", dashboard_id=3, title="Renamed"),
                            text="Renaming it.")
    asked = await turn(rt, "rename dashboard 3 to Renamed", conv_id="conv-loop-write")
    (card,) = of_type(asked, "confirm_required")
    server.reply_text("Renamed.")
    resumed = await confirm(rt, card["confirmation_id"], conv_id="conv-loop-write")
    assert resumed[-1]["status"] == "completed", resumed[-1]
    identity, token = rt.issuer.mint_demo("admin")
    await rt.agent.stop(conv_id="conv-loop-write", user_id=identity.user_id, user_jwt=token)
    _check(on_loop)


def _sender(rt: Runtime, conv_id: str) -> Callable[[str], Awaitable[Any]]:
    """An admin's page send into `conv_id` (`submit_turn`: it starts or queues)."""
    identity, token = rt.issuer.mint_demo("admin")

    async def send(text: str) -> Any:
        return await rt.agent.submit_turn(message=text, conv_id=conv_id,
                                          user_id=identity.user_id, user_jwt=token,
                                          env_id="ss-dev", uicontext_str=None)
    return send


async def test_a_queued_turn_is_admitted_off_the_event_loop(
        rt: Runtime, server: ScriptedOpenAIServer, on_loop: list[OnLoop]) -> None:
    """The queued turn starts from the end of the run before it (in that run's task): its
    owner check, lease, and stored message run in a worker thread, not on the loop."""
    held = server.reply_text("First answer.", deltas=2, hold_after=1)
    server.reply_text("Second answer.")
    send = _sender(rt, "conv-loop-queue")

    first = await send("hello")
    assert await held.until_reached()
    assert isinstance(await send("and again"), QueuedTurn)
    held.release.set()
    runs = {live.run_id: live async for live in rt.agent.runs.follow("conv-loop-queue")}
    assert next(iter(runs)) == first.run_id
    assert [live.status for live in runs.values()] == ["completed", "completed"]
    _check(on_loop)


async def test_a_send_after_an_approval_pause_starts_the_queue_off_the_event_loop(
        rt: Runtime, server: ScriptedOpenAIServer, on_loop: list[OnLoop]) -> None:
    """A run that paused for approval leaves its queued turn waiting; the next send goes on
    with the queue (`submit_turn` -> `start_next`), admitted in a worker thread too, and a
    follower that comes meanwhile waits for the launch and sees both queued runs."""
    held = server.reply_tool_calls(call("update_dashboard", dashboard_id=3, title="Renamed"),
                                   text="Renaming it.", hold_after=1)
    send = _sender(rt, "conv-loop-approval")

    first = await send("rename dashboard 3 to Renamed")
    assert await held.until_reached()
    assert isinstance(await send("what now?"), QueuedTurn)
    held.release.set()
    assert (await collect(first))[-1]["status"] == "awaiting_confirmation"
    server.reply_text("First queued answer.")
    server.reply_text("Second queued answer.")
    assert isinstance(await send("and then?"), QueuedTurn)
    runs = {live.run_id: live async for live in rt.agent.runs.follow("conv-loop-approval")}
    assert [live.request.user_message for live in runs.values()] == ["what now?", "and then?"]
    assert [live.status for live in runs.values()] == ["completed", "completed"]
    _check(on_loop)
