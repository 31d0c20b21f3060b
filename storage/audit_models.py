"""The audit log table (SPEC §5, §6): who did what, where, when, and how it ended.

Append-only: the repository has no update or delete function, and the database refuses
UPDATE and DELETE on the table itself (a trigger on SQLite and on PostgreSQL), so no path
in the app, nor a stray query, can edit it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DDL, JSON, Column, DateTime, Index, Text, event
from sqlmodel import Field, SQLModel

from storage.models import utcnow

__all__ = ["AuditEntry"]


class AuditEntry(SQLModel, table=True):
    """One decision (approved, denied, expired, superseded, denied_by_role, not_offered) or
    one execution (executed) of a write or dangerous tool call."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_at", "at"),
                      Index("ix_audit_log_confirmation", "confirmation_id"))

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow,
                         sa_column=Column(DateTime(timezone=True), nullable=False))
    user_id: str = Field(max_length=128)
    role: str = Field(max_length=16)
    action: str = Field(max_length=32)
    tool: str = Field(max_length=64)
    args: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    env_id: str | None = Field(default=None, max_length=64)
    env_tier: str | None = Field(default=None, max_length=16)
    outcome: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    confirmation_id: str | None = Field(default=None, max_length=64)
    conversation_id: str | None = Field(default=None, max_length=64)
    run_id: str | None = Field(default=None, max_length=64)
    call_id: str | None = Field(default=None, max_length=128)


_SQLITE_GUARDS = [
    DDL("CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log "
        "BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END"),
    DDL("CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log "
        "BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END"),
]
_POSTGRES_GUARDS = [
    DDL("CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger AS $$ "
        "BEGIN RAISE EXCEPTION 'audit_log is append-only'; END; $$ LANGUAGE plpgsql"),
    DDL("CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log "
        "FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()"),
]
for _ddl in _SQLITE_GUARDS:
    event.listen(AuditEntry.__table__, "after_create", _ddl.execute_if(dialect="sqlite"))
for _ddl in _POSTGRES_GUARDS:
    event.listen(AuditEntry.__table__, "after_create", _ddl.execute_if(dialect="postgresql"))
