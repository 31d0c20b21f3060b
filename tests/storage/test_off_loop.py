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


async def _all_waiting_at_once(parties: int) -> None:
    """`parties` calls that each wait until all of them are running: they pass only if
    the loop's executor runs that many at once (else the barrier breaks)."""
    barrier = threading.Barrier(parties, timeout=20)
    await asyncio.gather(*(off_loop(barrier.wait) for _ in range(parties)))


def test_the_server_runs_as_many_waiting_database_calls_at_once_as_postgres_connections(
        tmp_path) -> None:
    """asyncio's default executor has min(32, cores + 4) threads: six here, so ten runs'
    database calls, which mostly wait, queued for a thread (45 ms at a step, measured).
    The app's lifespan gives the loop `WORKER_THREADS`, one per pooled PostgreSQL
    connection."""
    from fastapi.testclient import TestClient

    import app
    from agent.settings import Settings
    from storage.db import WORKER_THREADS

    settings = Settings(database_url=f"sqlite:///{tmp_path}/app.db", data_dir=tmp_path,
                        agent_model_process=False)
    with TestClient(app.create_app(settings)) as client:
        client.portal.call(_all_waiting_at_once, WORKER_THREADS)
