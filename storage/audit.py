"""Repository functions for the audit log: append and read. There is deliberately no
update or delete function (and the database refuses both, see `storage.audit_models`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlmodel import Session, col, select

from storage.audit_models import AuditEntry

__all__ = ["append_entry", "in_flight", "list_entries", "list_object_changes"]


def append_entry(*, session: Session, user_id: str, role: str, action: str, tool: str,
                 args: dict[str, Any] | None = None, env_id: str | None = None,
                 env_tier: str | None = None, outcome: str = "",
                 confirmation_id: str | None = None, conversation_id: str | None = None,
                 run_id: str | None = None, call_id: str | None = None) -> AuditEntry:
    entry = AuditEntry(user_id=user_id, role=role, action=action, tool=tool, args=args,
                       env_id=env_id, env_tier=env_tier, outcome=outcome[:4000],
                       confirmation_id=confirmation_id, conversation_id=conversation_id,
                       run_id=run_id, call_id=call_id)
    session.add(entry)
    session.flush()
    return entry


def list_entries(*, session: Session, limit: int = 100, before_id: int | None = None,
                 confirmation_id: str | None = None, user_id: str | None = None
                 ) -> Sequence[AuditEntry]:
    """Newest first, paged by id; `user_id` keeps one person's entries only."""
    query = select(AuditEntry)
    if user_id is not None:
        query = query.where(AuditEntry.user_id == user_id)
    if before_id is not None:
        query = query.where(col(AuditEntry.id) < before_id)
    if confirmation_id is not None:
        query = query.where(AuditEntry.confirmation_id == confirmation_id)
    return session.exec(query.order_by(col(AuditEntry.id).desc()).limit(limit)).all()


def in_flight(*, session: Session, run_id: str) -> Sequence[AuditEntry]:
    """Writes of a run that were sent (an `executing` row, written before the request left)
    but have no outcome yet (no `executed` row for the same call)."""
    rows = session.exec(select(AuditEntry).where(AuditEntry.run_id == run_id,
                                                 col(AuditEntry.action).in_(
                                                     ["executing", "executed"]))).all()
    finished = {row.call_id for row in rows if row.action == "executed"}
    return [row for row in rows if row.action == "executing" and row.call_id not in finished]


def list_object_changes(*, session: Session, tools: Sequence[str], id_key: str, object_id: int,
                        env_id: str | None = None, user_id: str | None = None,
                        limit: int = 20) -> Sequence[AuditEntry]:
    """Executed writes of these tools whose arguments name this object, newest first; the
    id is read from the stored JSON arguments by the database (SQLite and PostgreSQL)."""
    query = select(AuditEntry).where(
        AuditEntry.action == "executed", col(AuditEntry.tool).in_(list(tools)),
        col(AuditEntry.args)[id_key].as_integer() == object_id)
    if env_id is not None:
        query = query.where(AuditEntry.env_id == env_id)
    if user_id is not None:
        query = query.where(AuditEntry.user_id == user_id)
    return session.exec(query.order_by(col(AuditEntry.id).desc()).limit(limit)).all()
