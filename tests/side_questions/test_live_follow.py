"""LiveRequest.follow: a follower that is still handling one update when the request
finishes must get the terminal state before the stream ends (the panel once kept showing a
running cursor after the answer had completed)."""

from __future__ import annotations

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
