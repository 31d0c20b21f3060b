"""The service's reads of stored side questions (synchronous: run in a worker thread)."""

from __future__ import annotations

from collections.abc import Callable

from agent.inputs import is_id
from side_questions.views import HistoryPage, SideRequestPublic
from storage import Database
from storage import side_repository as repo

__all__ = ["get_row", "page"]


def page(db: Database, parent_id: str, before: int | None, limit: int,
         overlay: Callable[[SideRequestPublic], SideRequestPublic]) -> HistoryPage:
    """A page of side history, newest first; `overlay` swaps in the live state of requests
    this process is streaming."""
    with db.session() as session:
        row = repo.get_session(session=session, parent_id=parent_id)
        if row is None:
            return HistoryPage([], None, None, 0)
        rows = repo.list_requests(session=session, parent_id=parent_id,
                                  generation=row.generation, before=before, limit=limit + 1)
        running = repo.running_request(session=session, parent_id=parent_id)
        snapshot = None
        if row.snapshot_run_id is not None:
            snapshot = {"run_id": row.snapshot_run_id, "version": row.snapshot_version,
                        "time": row.snapshot_at.isoformat() if row.snapshot_at else None,
                        "model": (row.snapshot or {}).get("model")}
        items = [overlay(SideRequestPublic.from_row(r)) for r in rows[:limit]]
        next_cursor = items[-1].ordinal if len(rows) > limit else 0
        return HistoryPage(items, overlay(SideRequestPublic.from_row(running))
                           if running is not None else None, snapshot, next_cursor)


def get_row(db: Database, request_id: str) -> tuple[str, SideRequestPublic] | None:
    """(parent id, the stored request), or None when there is no such request."""
    if not is_id(request_id):  # never a lookup with text the database cannot hold
        return None
    with db.session() as session:
        row = repo.get_request(session=session, request_id=request_id)
        return (row.parent_id, SideRequestPublic.from_row(row)) if row else None
