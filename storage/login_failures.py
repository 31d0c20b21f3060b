"""Failed sign-in attempts, for the per-username-and-address limit (SPEC §10).

A row holds only a digest of (username, client address) and a time: no name, address or
password. Counting in the database makes the limit hold across replicas; an attempt is
written before Superset is asked and removed again unless it failed, so parallel guesses
cannot slip past the limit between a check and a write.
"""

from __future__ import annotations

from sqlalchemy import Float, Index, String, func, text
from sqlmodel import Field, Session, SQLModel, col, delete, select

__all__ = ["LoginFailure", "discard_attempt", "failures_since", "lock_key", "prune_failures",
           "record_attempt"]


class LoginFailure(SQLModel, table=True):
    __tablename__ = "login_failures"
    __table_args__ = (Index("ix_login_failures_key_at", "key", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(sa_type=String(64))  # sha256 of "username\nclient address"
    at: float = Field(sa_type=Float)  # epoch seconds


def lock_key(*, session: Session, key: str) -> None:
    """Serialise the attempts of one key until this transaction ends, across replicas: on
    PostgreSQL a transaction-scoped advisory lock (without it, concurrent transactions each
    miss the others' uncommitted attempts); SQLite already lets one writer in at a time."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
                        {"key": key})


def record_attempt(*, session: Session, key: str, at: float) -> int:
    """Count an attempt as failed until `discard_attempt` says it was not (see the caller)."""
    row = LoginFailure(key=key, at=at)
    session.add(row)
    session.flush()
    assert row.id is not None
    return row.id


def discard_attempt(*, session: Session, attempt_id: int) -> None:
    session.exec(delete(LoginFailure).where(col(LoginFailure.id) == attempt_id))  # type: ignore[call-overload]


def failures_since(*, session: Session, key: str, since: float) -> tuple[int, float | None]:
    """How many failures of `key` happened after `since`, and when the oldest of them was."""
    count, oldest = session.exec(
        select(func.count(), func.min(LoginFailure.at))
        .where(LoginFailure.key == key, col(LoginFailure.at) > since)).one()
    return int(count or 0), (float(oldest) if oldest is not None else None)


def prune_failures(*, session: Session, before: float) -> None:
    """Forget attempts older than `before`. Rows another transaction holds are skipped (on
    PostgreSQL), so two replicas pruning at once neither wait for nor deadlock on each other."""
    old = (select(LoginFailure.id).where(col(LoginFailure.at) <= before)
           .with_for_update(skip_locked=True))
    session.exec(delete(LoginFailure).where(col(LoginFailure.id).in_(old)))  # type: ignore[call-overload]
