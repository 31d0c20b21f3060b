"""A side-question submission's two statements, built once (SQLAlchemy neither rebuilds nor
re-keys them per call, which was most of their CPU): the UPDATE that takes the parent's next
ordinal and reads what the submission needs of the session row, and the INSERT.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    ColumnElement,
    Table,
    and_,
    bindparam,
    case,
    exists,
    func,
    insert,
    null,
    type_coerce,
    update,
)
from sqlmodel import Session

from storage.models import Conversation, utcnow
from storage.side_models import RUNNING, SideQuestionRequest, SideQuestionSession
from storage.text import strip_nul

__all__ = ["Claim", "claim_ordinal", "insert_running"]

_SESSIONS: Table = SideQuestionSession.__table__  # type: ignore[attr-defined]
_REQUESTS: Table = SideQuestionRequest.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Claim:
    """What a submission needs of the parent's session row, returned by the UPDATE that took
    its ordinal (so it is exactly the row the request is numbered in)."""

    generation: int
    ordinal: int
    snapshot_run_id: str | None
    snapshot_version: int
    snapshot_at: datetime | None
    snapshot: dict[str, Any] | None  # None when it is the `known` one, or there is none


@functools.cache
def _claim_statement(with_owner: bool, with_known: bool) -> Any:
    """`claim_ordinal`'s statement, built once per shape: bound values only, so SQLAlchemy
    neither rebuilds nor re-keys it per submission (that was most of its CPU)."""
    table = _SESSIONS
    conditions: list[ColumnElement[bool]] = [table.c.parent_id == bindparam("p_parent")]
    if with_owner:
        owners = Conversation.__table__.c  # type: ignore[attr-defined]
        conditions.append(exists().where(owners.id == bindparam("p_parent"),
                                         owners.owner_id == bindparam("p_owner")))
    payload: ColumnElement[Any] = table.c.snapshot
    if with_known:
        same = and_(table.c.snapshot_run_id == bindparam("p_run"),
                    table.c.snapshot_version == bindparam("p_version"))
        payload = type_coerce(case((same, null()), else_=table.c.snapshot), JSON)
    return (update(table).where(*conditions).values(next_ordinal=table.c.next_ordinal + 1)
            .returning(table.c.generation, table.c.next_ordinal, table.c.snapshot_run_id,
                       table.c.snapshot_version, table.c.snapshot_at, payload))


@functools.cache
def _insert_statement(dialect: str) -> Any:
    """`insert_running`'s INSERT; the heartbeat is the database clock on PostgreSQL."""
    statement = insert(_REQUESTS)
    return (statement.values(heartbeat_at=func.clock_timestamp())
            if dialect == "postgresql" else statement)


def claim_ordinal(
    *, session: Session, parent_id: str, owner_id: str | None = None,
    known: tuple[str, int] | None = None,
) -> Claim | None:
    """Take the parent's next ordinal in one `UPDATE ... RETURNING` that also reads the
    generation and the snapshot (its payload only when it is not the `known` (run id,
    version) the caller already holds). With `owner_id`, only if that user owns the parent.
    None when there is no session row or the owner differs. The row stays locked until the
    transaction ends, which serialises this submission with a clear or a snapshot save."""
    params: dict[str, Any] = {"p_parent": parent_id}
    if owner_id is not None:
        params["p_owner"] = owner_id
    if known is not None:
        params["p_run"], params["p_version"] = known
    row = session.execute(_claim_statement(owner_id is not None, known is not None),
                          params).first()
    if row is None:
        return None
    return Claim(generation=row[0], ordinal=row[1] - 1, snapshot_run_id=row[2],
                 snapshot_version=row[3], snapshot_at=row[4], snapshot=row[5])


def insert_running(
    *, session: Session, parent_id: str, generation: int, ordinal: int,
    client_request_id: str, question: str, model: str, snapshot_run_id: str | None,
    snapshot_version: int | None, snapshot_at: datetime | None,
    owner_instance: str | None = None,
) -> dict[str, Any]:
    """One INSERT of a running request at `ordinal` (taken by the caller); returns its
    columns as written (the heartbeat aside). Raises IntegrityError when the client request
    id is taken or another request of the parent is running."""
    values: dict[str, Any] = {
        "id": uuid.uuid4().hex, "ordinal": ordinal, "parent_id": parent_id,
        "generation": generation, "client_request_id": client_request_id,
        "question": strip_nul(question) or "", "answer": "", "status": RUNNING, "error": None,
        "model": model, "snapshot_run_id": snapshot_run_id,
        "snapshot_version": snapshot_version, "snapshot_at": snapshot_at, "usage": {},
        "sequence": 1, "context_info": {}, "created_at": utcnow(), "finished_at": None,
        "owner_instance": owner_instance}
    dialect = session.get_bind().dialect.name
    heartbeat = {} if dialect == "postgresql" else {"heartbeat_at": utcnow()}
    session.execute(_insert_statement(dialect), {**values, **heartbeat})
    return values
