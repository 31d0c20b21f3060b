"""`storage.off_loop`: database work in a worker thread, and a cancellation that waits for
it, so a stopped run never records its end while one of its writes is still landing."""

from __future__ import annotations

import asyncio
import threading

import pytest

from storage import off_loop


async def test_the_work_runs_in_a_worker_thread_and_returns_its_value() -> None:
    loop_thread = threading.get_ident()
    value, thread = await off_loop(lambda a, *, b: (a + b, threading.get_ident()), 1, b=2)
    assert value == 3 and thread != loop_thread


async def test_an_error_of_the_work_is_raised_to_the_caller() -> None:
    def fail() -> None:
        raise ValueError("no such row")

    with pytest.raises(ValueError, match="no such row"):
        await off_loop(fail)


async def test_a_cancellation_waits_for_the_work_to_end_then_is_raised() -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def write() -> None:
        started.set()
        release.wait(timeout=30)
        finished.set()

    task = asyncio.ensure_future(off_loop(write))
    await asyncio.to_thread(started.wait, 30)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=0.2)  # still waiting (can only under-detect)
    assert not done and not finished.is_set()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()  # the write had ended before the cancellation reached the caller
