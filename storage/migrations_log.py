"""The record of dashboard migrations between environments (for `migration_history`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, Text, and_, or_
from sqlmodel import Field, Session, SQLModel, col, select

from storage.models import utcnow

__all__ = [
    "MigrationRecord",
    "list_migrations",
    "migrations_touching",
    "record_migration",
    "record_unknown",
]

UNKNOWN_MIGRATION = ("status unknown: the server stopped while the import was running; "
                     "check the dashboard in the target environment")


class MigrationRecord(SQLModel, table=True):
    """One `migrate_dashboard` execution: what moved where, who did it, how it ended."""

    __tablename__ = "migration_records"
    __table_args__ = (Index("ix_migration_records_created", "created_at"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: str = Field(max_length=128)
    source_env: str = Field(max_length=64)
    target_env: str = Field(max_length=64)
    dashboard_id: int = Field(index=True)  # the id in the source environment
    dashboard_uuid: str | None = Field(default=None, max_length=64)
    dashboard_title: str | None = Field(default=None, max_length=500)
    target_dashboard_id: int | None = None
    status: str = Field(max_length=16)  # succeeded | failed | unknown
    details: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    error: str | None = Field(default=None, sa_column=Column(Text))
    created_at: datetime = Field(default_factory=utcnow,
                                 sa_column=Column(DateTime(timezone=True), nullable=False))


def record_migration(*, session: Session, user_id: str, source_env: str, target_env: str,
                     dashboard_id: int, status: str, dashboard_uuid: str | None = None,
                     dashboard_title: str | None = None, target_dashboard_id: int | None = None,
                     details: dict[str, Any] | None = None,
                     error: str | None = None) -> MigrationRecord:
    record = MigrationRecord(
        user_id=user_id, source_env=source_env, target_env=target_env,
        dashboard_id=dashboard_id, dashboard_uuid=dashboard_uuid,
        dashboard_title=(dashboard_title or None) and dashboard_title[:500],
        target_dashboard_id=target_dashboard_id, status=status, details=details,
        error=error)
    session.add(record)
    session.flush()
    return record


def list_migrations(*, session: Session, limit: int = 20,
                    dashboard_id: int | None = None) -> Sequence[MigrationRecord]:
    """Newest first."""
    query = select(MigrationRecord)
    if dashboard_id is not None:
        query = query.where(MigrationRecord.dashboard_id == dashboard_id)
    query = query.order_by(col(MigrationRecord.created_at).desc(),
                           col(MigrationRecord.id).desc()).limit(limit)
    return session.exec(query).all()


def migrations_touching(*, session: Session, dashboard_id: int, env_id: str | None = None,
                        user_id: str | None = None, limit: int = 20
                        ) -> Sequence[MigrationRecord]:
    """Migrations that read or overwrote one dashboard, newest first: it was the source (its
    id in the source environment) or the dashboard the import produced in the target."""
    from_here = MigrationRecord.dashboard_id == dashboard_id
    into_here = MigrationRecord.target_dashboard_id == dashboard_id
    if env_id is not None:
        from_here = and_(from_here, MigrationRecord.source_env == env_id)
        into_here = and_(into_here, MigrationRecord.target_env == env_id)
    query = select(MigrationRecord).where(or_(from_here, into_here))
    if user_id is not None:
        query = query.where(MigrationRecord.user_id == user_id)
    return session.exec(query.order_by(col(MigrationRecord.created_at).desc(),
                                       col(MigrationRecord.id).desc()).limit(limit)).all()


def record_unknown(*, session: Session, user_id: str, tool: str, args: Any) -> None:
    """A `migrate_dashboard` whose end nobody saw (the run was stopped or the server died
    mid-import): listed by `migration_history` as `unknown`, as the audit log says."""
    if tool != "migrate_dashboard" or not isinstance(args, dict):
        return
    try:
        dashboard_id = int(args.get("dashboard_id"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return
    record_migration(session=session, user_id=user_id, status="unknown",
                     source_env=str(args.get("source_env") or "?")[:64],
                     target_env=str(args.get("target_env") or "?")[:64],
                     dashboard_id=dashboard_id, error=UNKNOWN_MIGRATION)
