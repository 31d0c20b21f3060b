"""LiveRequest.follow: a follower that is still handling one update when the request
finishes must get the terminal state before the stream ends (the panel once kept showing a
running cursor after the answer had completed)."""

from __future__ import annotations

import asyncio

from side_questions.views import LiveRequest, SideRequestPublic


def _running() -> SideRequestPublic:
    return SideRequestPublic(id="r1", ordinal=1, question="q", answer="", status="running",
                             error=None, model="offline", snapshot_at=None, usage={},
                             sequence=1, created_at=None, context_info={})


async def test_finish_during_a_yield_still_yields_the_terminal_state() -> None:
    live = LiveRequest(state=_running(), parent_id="p", generation=0)
    stream = live.follow()
    first = await anext(stream)
    assert first.request is not None and first.request.status == "running"
    # the follower is busy with `first` (suspended at the yield) while the request ends
    live.update(answer="partial")
    live.finish(answer="partial and done", status="completed")
    updates = [update async for update in stream]
    assert updates, "the stream ended without the terminal state"
    last = updates[-1]
    assert last.request is not None and last.request.status == "completed"
    assert last.request.answer == "partial and done"
    assert [u.sequence for u in updates] == sorted({u.sequence for u in updates})


async def test_cleared_during_a_yield_ends_with_cleared() -> None:
    live = LiveRequest(state=_running(), parent_id="p", generation=0)
    stream = live.follow()
    await anext(stream)
    live.mark_cleared()
    updates = [update async for update in stream]
    assert [u.kind for u in updates] == ["cleared"]


async def test_words_staged_before_the_end_go_out_with_it() -> None:
    """An answer's last words and usage come in the same read as the model's reply; the
    end is announced once stored (the runner awaits its write meanwhile). Published at
    once, the words woke every follower for an event of their own right before the end
    (100 followers: the end came 22-26 ms after the last words); staged and held, they go
    out with it."""
    live = LiveRequest(state=_running(), parent_id="p", generation=0)
    stream = live.follow()
    await anext(stream)
    live.stage(answer="the last words")
    live.stage(usage={"total_tokens": 9})
    live.hold(60.0)  # far longer than this test: only the end may publish them
    for _ in range(5):  # the runner awaits the end's write: the loop turns meanwhile
        await asyncio.sleep(0)
    live.finish(status="completed")
    updates = [update async for update in stream]
    assert len(updates) == 1
    end = updates[0].request
    assert end is not None and end.status == "completed"
    assert end.answer == "the last words" and end.usage == {"total_tokens": 9}


async def test_staged_words_go_out_alone_when_the_end_is_late() -> None:
    live = LiveRequest(state=_running(), parent_id="p", generation=0)
    stream = live.follow()
    await anext(stream)
    live.stage(answer="words")  # published at the next turn of the loop
    update = await asyncio.wait_for(anext(stream), timeout=30)
    assert update.request is not None and update.request.answer == "words"
    live.stage(answer="words and more")
    live.hold(0.01)  # the end is not stored within it: the words go out alone
    update = await asyncio.wait_for(anext(stream), timeout=30)
    assert update.request is not None
    assert (update.request.answer, update.request.status) == ("words and more", "running")
    live.update(context_info={"stage": "done"})  # an update publishes at once
    update = await asyncio.wait_for(anext(stream), timeout=30)
    assert update.request is not None and update.request.context_info == {"stage": "done"}
