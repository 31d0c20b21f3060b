"""Single use is the database's job: many threads deciding one confirmation at once, each
with its own engine (as separate replicas would), see exactly one winner."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from storage import Database
from storage import confirmations as repo
from storage import conversations as conversations_repo

THREADS = 6


def _pending(db: Database, expires_in: float = 600.0) -> str:
    now = time.time()
    with db.session() as session:
        conversations_repo.create_conversation(session=session, owner_id="u",
                                               conversation_id="c")
        row = repo.create_confirmation(
            session=session, conversation_id="c", user_id="u", run_id="r", call_id="k",
            tool="delete_dashboard", args={"dashboard_id": 1}, env_id="prod",
            tool_risk="dangerous", env_risk="prod", permission_risk="allowed", dangerous=True,
            countdown_s=10, summary="Delete dashboard #1", resume={}, created_ts=now,
            expires_ts=now + expires_in)
        return row.id


def test_concurrent_decisions_have_one_winner(db: Database) -> None:
    confirmation_id = _pending(db)
    barrier = threading.Barrier(THREADS)

    def decide(index: int) -> bool:
        replica = Database(db.url)
        try:
            barrier.wait(timeout=30)
            with replica.session() as session:
                return repo.decide(session=session, confirmation_id=confirmation_id,
                                   status="approved" if index % 2 else "denied",
                                   decided_by=f"t{index}", now=time.time())
        finally:
            replica.dispose()

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(decide, range(THREADS)))

    assert results.count(True) == 1
    with db.session() as session:
        row = repo.get_confirmation(session=session, confirmation_id=confirmation_id)
    assert row is not None and row.status in ("approved", "denied")
    assert row.decided_by == f"t{results.index(True)}"


def test_an_expired_row_cannot_be_decided(db: Database) -> None:
    confirmation_id = _pending(db, expires_in=-1.0)
    with db.session() as session:
        assert not repo.decide(session=session, confirmation_id=confirmation_id,
                               status="approved", decided_by="u", now=time.time())
        assert repo.expire(session=session, confirmation_id=confirmation_id,
                           status="expired", now=time.time())
        assert not repo.expire(session=session, confirmation_id=confirmation_id,
                               status="superseded", now=time.time())
