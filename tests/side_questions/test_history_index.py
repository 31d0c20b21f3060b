"""History paging is O(page): the exact statement `list_requests` sends is planned with the
(parent_id, ordinal) index on both databases, not a scan and sort of every request."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event

from storage import Database
from storage import conversations as conv_repo
from storage import side_repository as repo

PARENTS = 8
PER_PARENT = 120


def _seed(db: Database) -> None:
    with db.session() as session:
        for number in range(PARENTS):
            parent = f"conv-{number}"
            conv_repo.create_conversation(session=session, owner_id="alice",
                                          conversation_id=parent)
            repo.ensure_session(session=session, parent_id=parent)
        session.flush()
        for number in range(PARENTS):
            parent = f"conv-{number}"
            for index in range(PER_PARENT):
                row = repo.create_request(
                    session=session, parent_id=parent, generation=0,
                    client_request_id=f"c{index}", question="q", model="m",
                    snapshot_run_id=None, snapshot_version=None, snapshot_at=None)
                assert row is not None
                repo.update_request(session=session, request_id=row.id, generation=0,
                                    status="completed")


def _captured_page_query(db: Database) -> tuple[str, Any]:
    seen: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "FROM side_question_requests" in statement and "ORDER BY" in statement:
            seen.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", capture)
    try:
        with db.session() as session:
            rows = repo.list_requests(session=session, parent_id="conv-3", generation=0,
                                      before=60, limit=21)
    finally:
        event.remove(db.engine, "before_cursor_execute", capture)
    assert [r.ordinal for r in rows] == list(range(59, 38, -1))
    assert len(seen) == 1
    return seen[0]


def test_page_query_uses_the_history_index(db: Database) -> None:
    _seed(db)
    statement, parameters = _captured_page_query(db)
    with db.engine.connect() as conn:
        if db.dialect == "postgresql":
            conn.exec_driver_sql("ANALYZE side_question_requests")
            # The table is small, so forbid the sequential scan: this proves the planner
            # *can* serve the page from the index (with a LIMIT, not a sort of everything).
            conn.exec_driver_sql("SET enable_seqscan = off")
            plan = "\n".join(row[0] for row in conn.exec_driver_sql(
                "EXPLAIN " + statement, parameters))
            assert "ix_side_requests_history" in plan, plan
            assert "Sort" not in plan.split("Limit", 1)[1], plan
        else:
            plan = "\n".join(str(row[-1]) for row in conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + statement, parameters))
            assert "ix_side_requests_history" in plan, plan
            assert "TEMP B-TREE" not in plan, plan  # no sort: rows come in index order
