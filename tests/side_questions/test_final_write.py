"""A completed side answer is never recorded as interrupted (issue 12, item 5), on SQLite and
PostgreSQL.

An outage longer than the stale window lets a sweep (another replica's, or this one's)
end a request whose owner is alive but could not beat. The owner keeps answering, and its
final write takes the row back; a stop or a clear still wins over it.
"""

from __future__ import annotations

import asyncio

from storage import Database
from storage import side_repository as repo
from storage.models import utcnow
from tests.side_questions.conftest import finished


def _sweep_everything(db: Database) -> int:
    """What a sweep does once the owner's heartbeat is older than the stale window."""
    with db.session() as session:
        return repo.interrupt_stale(session=session, stale_after_s=0)


async def test_an_answer_swept_while_its_owner_lives_ends_completed(side, db, server) -> None:  # type: ignore[no-untyped-def]
    held = server.reply_text("first half, then the second half", deltas=2, hold_after=1)
    result = await side.submit(parent_id="conv-1", question="Q?", client_request_id="swept")
    await held.until_reached()
    assert await asyncio.to_thread(_sweep_everything, db) == 1
    held.release.set()
    final = await finished(side, result.request.id)
    assert final.status == "completed" and final.answer == "first half, then the second half"
    with db.session() as session:
        stored = repo.get_request(session=session, request_id=result.request.id)
    assert stored is not None and stored.status == "completed" and stored.error is None
    assert stored.answer == final.answer and stored.sequence == final.sequence


def test_the_final_write_never_overrides_a_stop(db: Database, side) -> None:  # type: ignore[no-untyped-def]
    with db.session() as session:
        generation = repo.get_session(session=session, parent_id="conv-1").generation
        row = repo.create_request(session=session, parent_id="conv-1", generation=generation,
                                  client_request_id="stopped", question="Q?", model="m",
                                  snapshot_run_id=None, snapshot_version=None,
                                  snapshot_at=None)
        assert row is not None
        repo.update_request(session=session, request_id=row.id, generation=generation,
                            status="cancelled", error="Stopped.", sequence=3)
    with db.session() as session:
        assert not repo.finish_request(session=session, request_id=row.id,
                                       generation=generation, status="completed",
                                       answer="late", sequence=4, finished_at=utcnow())
        stored = repo.get_request(session=session, request_id=row.id)
    assert stored is not None and stored.status == "cancelled" and stored.answer == ""
