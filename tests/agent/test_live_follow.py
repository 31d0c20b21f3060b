"""Following a live run: bounded work per update, no lost wake-ups (issue 16; not timed).

Measured before: every reader made two tasks and an `asyncio.wait` for each update it
waited for (a hundred streams: two hundred tasks per round of updates, all on the loop).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent import events as ev
from agent.live_run import LiveRun
from agent.loop import RunRequest


def _live() -> LiveRun:
    request: Any = RunRequest.__new__(RunRequest)  # follow() reads nothing of it
    return LiveRun(run_id="r1", conversation_id="c1", owner_id="u1", request=request)


def _token(stamp: ev.EventStamper, text: str) -> Any:
    return stamp(ev.Token, text=text)


async def test_a_reader_waits_without_tasks_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    live, stamp = _live(), ev.EventStamper("r1")
    made: list[Any] = []
    real_ensure_future = asyncio.ensure_future

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append(args)
        return real_ensure_future(*args, **kwargs)

    async def produce() -> None:
        for n in range(50):
            live.append(_token(stamp, f"w{n} "))
            await asyncio.sleep(0)
        live.settle()

    producer = asyncio.get_running_loop().create_task(produce())
    monkeypatch.setattr(asyncio, "ensure_future", counting)
    seen = [len(events) async for events in live.follow()]
    monkeypatch.undo()
    await producer
    assert made == []
    assert seen[-1] == 51 and live.events[-1]["type"] == "done"
    assert seen == sorted(set(seen))


async def test_a_busy_reader_still_gets_what_another_reader_woke_for() -> None:
    """One reader clears `changed` while the other is busy with its previous update: the
    busy one still sees the new events and the end, without a further change."""
    live, stamp = _live(), ev.EventStamper("r1")
    live.append(_token(stamp, "a "))
    fast, slow = live.follow(), live.follow()
    assert len(await anext(fast)) == 1
    assert len(await anext(slow)) == 1  # the slow reader is now "busy" with this update
    waiting = asyncio.ensure_future(anext(fast))
    await asyncio.sleep(0)
    live.append(_token(stamp, "b "))
    assert len(await waiting) == 2  # the fast reader woke and went on
    live.settle()  # the end: `finished` and `changed`
    assert len(await anext(fast)) == 3
    rest = [len(events) async for events in slow]  # the slow one resumes only now
    assert rest == [3]
    assert [len(events) async for events in fast] == []
