"""Replica-safe recovery: two services on one database stand for two app processes.

A replica starting (or sweeping) leaves another live replica's answer alone, even through
seconds without a token; a row whose owner stopped beating becomes `interrupted` (partial
answer and usage kept) within a bounded wait and no longer keeps its parent busy; the
heartbeat rides on the progress writes, so the write budget per answer still holds.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from sqlalchemy import update

from side_questions.errors import Conflict
from storage import Database
from storage import side_repository as repo
from storage.models import utcnow
from storage.side_models import SideQuestionRequest
from tests.side_questions.conftest import WriteCounter, finished, seed_parent

STALE_S = 3.0  # heartbeat every 0.75 s, sweep every 1.5 s: a wide margin on a loaded machine


def _row(db: Database, request_id: str) -> SideQuestionRequest:
    with db.session() as session:
        row = repo.get_request(session=session, request_id=request_id)
        assert row is not None
        return row


def _orphan(db: Database, parent: str, *, age_s: float, answer: str = "half an ans") -> str:
    """A running row left by a replica that died `age_s` seconds after its last beat."""
    with db.session() as session:
        row = repo.create_request(
            session=session, parent_id=parent, generation=0, client_request_id="orphan",
            question="Asked on the dead replica?", model="m", snapshot_run_id="run-1",
            snapshot_version=1, snapshot_at=None, owner_instance="dead-host:1:0")
        assert row is not None
        request_id = row.id
        session.execute(update(SideQuestionRequest)
                        .where(SideQuestionRequest.id == request_id)
                        .values(answer=answer, usage={"total_tokens": 7}, sequence=3,
                                heartbeat_at=utcnow() - timedelta(seconds=age_s)))
    return request_id


async def _warm(service, db: Database, server) -> None:  # type: ignore[no-untyped-def]
    """Answer one question first: litellm's first call in a process imports lazily on the
    event loop, and on a loaded machine that can stall heartbeats longer than `STALE_S`."""
    seed_parent(db, service.settings, "warm-up")
    server.reply_text("ok")
    result = await service.submit(parent_id="warm-up", question="?", client_request_id="w")
    assert (await finished(service, result.request.id)).status == "completed"


async def _wait_status(db: Database, request_id: str, status: str, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while _row(db, request_id).status != status:
        assert time.monotonic() < deadline, _row(db, request_id).status
        await asyncio.sleep(0.1)


async def test_starting_replica_leaves_a_live_answer_alone(side_factory, db, server) -> None:  # type: ignore[no-untyped-def]
    a = side_factory(side_stale_after_s=STALE_S)
    seed_parent(db, a.settings)
    await _warm(a, db, server)
    held = server.reply_text("first part, then the rest", deltas=2, hold_after=2)
    result = await a.submit(parent_id="conv-1", question="Q?", client_request_id="r")
    assert await held.until_reached()
    b = side_factory(side_stale_after_s=STALE_S)
    assert b.start() == 0  # replica B starts while A streams
    # No token for well over the stale window: A's touches keep the row alive while B's
    # sweeper runs every second.
    await asyncio.sleep(2 * STALE_S)
    row = _row(db, result.request.id)
    assert row.status == "running" and row.owner_instance == a.instance_id
    assert b.sweeper.sweeps >= 2
    held.release.set()
    final = await finished(a, result.request.id)
    assert final.status == "completed" and final.answer == "first part, then the rest"
    assert (await b.get(result.request.id)).status == "completed"


async def test_dead_owner_is_interrupted_by_the_sweeper(side_factory, db) -> None:  # type: ignore[no-untyped-def]
    service = side_factory(side_stale_after_s=STALE_S)
    seed_parent(db, service.settings)
    request_id = _orphan(db, "conv-1", age_s=0)  # it beat just now, then died
    assert service.start() == 0  # not stale yet: it might be a live replica
    final = await asyncio.wait_for(finished(service, request_id), 30)
    assert final.status == "interrupted" and "restarted" in (final.error or "")
    assert final.answer == "half an ans" and final.usage == {"total_tokens": 7}
    assert final.sequence == 4
    assert (await service.history(parent_id="conv-1")).running is None


async def test_stale_running_row_does_not_block_a_new_submit(side_factory, db, server) -> None:  # type: ignore[no-untyped-def]
    service = side_factory()  # default threshold (20 s); no sweeper running
    seed_parent(db, service.settings)
    seed_parent(db, service.settings, "conv-2")
    live_elsewhere = _orphan(db, "conv-2", age_s=1)
    with pytest.raises(Conflict) as busy:  # a fresh heartbeat: its owner may be alive
        await service.submit(parent_id="conv-2", question="Q", client_request_id="n")
    assert busy.value.kind == "busy"
    assert _row(db, live_elsewhere).status == "running"
    dead = _orphan(db, "conv-1", age_s=60)
    server.reply_text("fresh answer")
    result = await service.submit(parent_id="conv-1", question="New?", client_request_id="n")
    assert result.created
    assert _row(db, dead).status == "interrupted" and _row(db, dead).answer == "half an ans"
    assert (await finished(service, result.request.id)).status == "completed"


async def test_racing_submits_on_a_stale_parent_start_one(side_factory, db, server) -> None:  # type: ignore[no-untyped-def]
    a, b = side_factory(), side_factory()  # two replicas, one stale row on the parent
    seed_parent(db, a.settings)
    dead = _orphan(db, "conv-1", age_s=60)
    server.reply_text("only one")
    outcomes = await asyncio.gather(
        a.submit(parent_id="conv-1", question="A?", client_request_id="a"),
        b.submit(parent_id="conv-1", question="B?", client_request_id="b"),
        return_exceptions=True)
    created = [o for o in outcomes if not isinstance(o, BaseException)]
    refused = [o for o in outcomes if isinstance(o, Conflict)]
    assert len(created) == 1 and all(c.kind == "busy" for c in refused)
    assert len(created) + len(refused) == 2
    assert _row(db, dead).status == "interrupted"
    # Either replica can follow it to the end (the other one polls the database).
    assert (await finished(a, created[0].request.id)).status == "completed"
    assert (await finished(b, created[0].request.id)).status == "completed"


async def test_owner_stops_when_its_row_ends_elsewhere(side_factory, db, server) -> None:  # type: ignore[no-untyped-def]
    a = side_factory(side_stale_after_s=STALE_S)
    b = side_factory(side_stale_after_s=STALE_S)
    seed_parent(db, a.settings)
    await _warm(a, db, server)
    held = server.reply_text("some words and more", deltas=2, hold_after=2)
    result = await a.submit(parent_id="conv-1", question="Q", client_request_id="s")
    assert await held.until_reached()
    stopped = await b.cancel(result.request.id)  # Stop reached replica B
    assert stopped.status == "cancelled"
    # A notices at its next heartbeat, without waiting for a token that never comes.
    final = await asyncio.wait_for(finished(a, result.request.id), 30)
    held.release.set()
    assert final.status == "cancelled" and a.running_count == 0
    assert _row(db, result.request.id).status == "cancelled"


async def test_heartbeats_keep_within_the_write_budget(side_factory, db, server) -> None:  # type: ignore[no-untyped-def]
    service = side_factory(side_stale_after_s=STALE_S)
    seed_parent(db, service.settings)
    await _warm(service, db, server)
    service.start()
    reply = server.reply_text("word " * 40, deltas=40, delay_s=0.02, hold_after=20)
    counter = WriteCounter(db, "side_question_requests")
    started = time.monotonic()
    result = await service.submit(parent_id="conv-1", question="Q", client_request_id="w")
    assert await reply.until_reached()
    before = _row(db, result.request.id).heartbeat_at
    await asyncio.sleep(1.6)  # silent: only heartbeat touches (every 0.5 s) write
    touched = _row(db, result.request.id).heartbeat_at
    reply.release.set()
    final = await finished(service, result.request.id)
    duration = time.monotonic() - started
    counter.close()
    assert final.status == "completed" and final.answer == "word " * 40
    assert before is not None and touched is not None and touched > before
    assert 4 <= counter.count <= 2 + duration / 0.25, (counter.count, duration)


async def test_a_restarted_replica_ends_its_previous_incarnations_answers_at_once(
    side_factory, db, server  # type: ignore[no-untyped-def]
) -> None:
    """SPEC §9 "on start, leftover running requests become interrupted": a process that
    replaces an earlier one of the same replica (same name) need not wait for staleness."""
    old = side_factory(side_replica_name="web-1")
    seed_parent(db, old.settings)
    await _warm(old, db, server)
    held = server.reply_text("half of it, then more", deltas=2, hold_after=2)
    result = await old.submit(parent_id="conv-1", question="Q?", client_request_id="r")
    assert await held.until_reached()
    deadline = time.monotonic() + 30
    while not _row(db, result.request.id).answer:  # the partial answer is flushed (≤250 ms)
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    other = side_factory(side_replica_name="web-2")
    assert other.recover() == 0  # another replica leaves it alone: its heartbeat is fresh
    new = side_factory(side_replica_name="web-1")  # the same replica, started again
    assert new.recover() == 1
    row = _row(db, result.request.id)
    assert row.status == "interrupted" and row.answer.startswith("half")
    held.release.set()
