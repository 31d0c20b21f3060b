"""Closing a throttled writer (side_questions/throttle.py): a write in flight is waited for,
a task that only waits for its turn is not."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from side_questions.throttle import ThrottledWriter


async def test_closing_with_no_write_in_flight_returns_without_a_turn_of_the_loop() -> None:
    """The side answer's end closes its progress writer right before its final write; the
    writer's task then sleeps until its interval is due. Before, `close` awaited that task's
    cancellation: a turn of the event loop, milliseconds when a hundred followers share it."""
    written: list[str] = []
    writer: ThrottledWriter[str] = ThrottledWriter(written.append, interval_s=60,
                                                   last_write=time.monotonic())
    writer.offer("words")  # due in a minute: the task sleeps
    await asyncio.sleep(0)
    task = writer._task
    assert task is not None and not task.done()
    closing = writer.close()
    with pytest.raises(StopIteration):  # finished in one step: nothing awaited
        closing.send(None)
    await asyncio.wait({task})  # it takes its cancellation on its own next step
    assert task.cancelled() and written == []
    writer.offer("after")  # closed: ignored
    assert writer.pending is None


async def test_closing_waits_for_a_write_in_flight() -> None:
    """The end's write must land after the last progress write, never before it."""
    release, started = threading.Event(), threading.Event()
    written: list[str] = []

    def write(value: str) -> None:
        started.set()
        assert release.wait(60)
        written.append(value)

    writer: ThrottledWriter[str] = ThrottledWriter(write, interval_s=0)
    writer.offer("words")
    while not started.is_set():
        await asyncio.sleep(0.001)
    closing = asyncio.ensure_future(writer.close())
    await asyncio.sleep(0)
    assert not closing.done()
    release.set()
    await closing
    assert written == ["words"]
