"""Repository functions for pending confirmations; single use is enforced by the database.

`decide` is one conditional UPDATE (`... WHERE id = ? AND status = 'pending' AND
expires_ts > now`): of two concurrent approvals, on one process or on several replicas,
exactly one sees a changed row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from storage.confirmation_models import PENDING, Confirmation

__all__ = [
    "create_confirmation",
    "decide",
    "expire",
    "get_confirmation",
    "list_pending",
    "set_outcome",
]


def create_confirmation(*, session: Session, **fields: Any) -> Confirmation:
    row = Confirmation(**fields)
    session.add(row)
    session.flush()
    return row


def get_confirmation(*, session: Session, confirmation_id: str) -> Confirmation | None:
    return session.get(Confirmation, confirmation_id)


def list_pending(*, session: Session, conversation_id: str) -> Sequence[Confirmation]:
    query = (select(Confirmation)
             .where(Confirmation.conversation_id == conversation_id,
                    Confirmation.status == PENDING)
             .order_by(col(Confirmation.created_ts)))
    return session.exec(query).all()


def decide(*, session: Session, confirmation_id: str, status: str, decided_by: str,
           now: float) -> bool:
    """Move a live pending row to `status`; False when it was not pending or has expired."""
    result = session.execute(
        update(Confirmation)
        .where(col(Confirmation.id) == confirmation_id, col(Confirmation.status) == PENDING,
               col(Confirmation.expires_ts) > now)
        .values(status=status, decided_ts=now, decided_by=decided_by))
    return result.rowcount == 1  # type: ignore[attr-defined]


def expire(*, session: Session, confirmation_id: str, status: str, now: float,
           decided_by: str | None = None) -> bool:
    """Close a pending row without a decision (expired, superseded); False if already closed."""
    result = session.execute(
        update(Confirmation)
        .where(col(Confirmation.id) == confirmation_id, col(Confirmation.status) == PENDING)
        .values(status=status, decided_ts=now, decided_by=decided_by))
    return result.rowcount == 1  # type: ignore[attr-defined]


def set_outcome(*, session: Session, confirmation_id: str, outcome: str) -> None:
    """Record how the approved call ended (succeeded, failed, status unknown)."""
    session.execute(update(Confirmation).where(col(Confirmation.id) == confirmation_id)
                    .values(outcome=outcome[:2000]))
