"""The lease of a conversation's running main run (SPEC §9, §11): one row while a run runs.

The primary key is the conversation, so "one running main run per conversation" is held by
the database itself: a second run, from this process or from another replica, cannot insert
its lease. The row also says who runs it (the replica's instance id) and when it last showed
life (a heartbeat, with the answer streamed so far), so the run of a replica that died can
be ended as `interrupted`, its partial answer kept, and the conversation freed.

A table of its own rather than columns on `runs`: the schema is still created at start with
no migrations, and a new table is the one change an existing database takes as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Column, Float, ForeignKey, String, Text, delete, insert, update
from sqlmodel import Field, Session, SQLModel, col, select

from storage.text import strip_nul

__all__ = ["RunLease", "beat", "claim", "get", "release", "stale"]

PARTIAL_LIMIT = 20_000  # characters of a streamed answer kept for an interrupted run


class RunLease(SQLModel, table=True):
    __tablename__ = "run_leases"

    conversation_id: str = Field(sa_column=Column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True))
    run_id: str = Field(max_length=64, unique=True)
    owner: str = Field(max_length=200)  # the instance id of the process running it
    user_id: str = Field(max_length=128)
    heartbeat_ts: float = Field(sa_column=Column(Float, nullable=False))
    partial: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))


_LEASES = RunLease.__table__  # statements on the table: no ORM unit of work or bulk sync,
# which were most of their CPU (as for messages, runs and snapshots; a turn claims and
# releases a lease, and a run beats while it runs)


def claim(*, session: Session, conversation_id: str, run_id: str, owner: str, user_id: str,
          now: float) -> RunLease:
    """Insert the lease; the primary key refuses a second one (`IntegrityError`)."""
    lease = RunLease(conversation_id=conversation_id, run_id=run_id, owner=owner,
                     user_id=user_id, heartbeat_ts=now)
    session.execute(insert(_LEASES).values(conversation_id=conversation_id, run_id=run_id,
                                           owner=owner, user_id=user_id, heartbeat_ts=now,
                                           partial=""))
    return lease


def get(*, session: Session, conversation_id: str) -> RunLease | None:
    return session.get(RunLease, conversation_id)


def beat(*, session: Session, run_id: str, owner: str, now: float, partial: str) -> bool:
    """Refresh a lease this process holds; False when it is gone (another replica ended it)."""
    result = session.execute(
        update(_LEASES).where(_LEASES.c.run_id == run_id, _LEASES.c.owner == owner)
        .values(heartbeat_ts=now, partial=(strip_nul(partial) or "")[-PARTIAL_LIMIT:]))
    return result.rowcount == 1  # type: ignore[attr-defined]


def release(*, session: Session, run_id: str) -> bool:
    result = session.execute(delete(_LEASES).where(_LEASES.c.run_id == run_id))
    return result.rowcount == 1  # type: ignore[attr-defined]


def stale(*, session: Session, older_than: float, owner_prefix: str | None = None,
          exclude_owner: str | None = None) -> Sequence[RunLease]:
    """Leases whose heartbeat is older than `older_than`, or (with `owner_prefix`) every
    lease of that replica's earlier processes, whatever their age."""
    query = select(RunLease)
    if owner_prefix is not None:
        query = query.where(col(RunLease.owner).startswith(owner_prefix))
    else:
        query = query.where(col(RunLease.heartbeat_ts) < older_than)
    if exclude_owner is not None:
        query = query.where(col(RunLease.owner) != exclude_owner)
    return session.exec(query).all()
