"""Failed sign-in attempts, for the per-username-and-address limit (SPEC §10).

A row holds only a digest of (username, client address) and a time: no name, address or
password. Counting in the database makes the limit hold across replicas; an attempt is
written before Superset is asked and removed again unless it failed, so parallel guesses
cannot slip past the limit between a check and a write.
"""

from __future__ import annotations

from sqlalchemy import Float, Index, String, func
from sqlmodel import Field, Session, SQLModel, col, delete, select

__all__ = ["LoginFailure", "discard_attempt", "failures_since", "prune_failures",
           "record_attempt"]


class LoginFailure(SQLModel, table=True):
    __tablename__ = "login_failures"
    __table_args__ = (Index("ix_login_failures_key_at", "key", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(sa_type=String(64))  # sha256 of "username\nclient address"
    at: float = Field(sa_type=Float)  # epoch seconds


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
    session.exec(delete(LoginFailure).where(col(LoginFailure.at) <= before))  # type: ignore[call-overload]
