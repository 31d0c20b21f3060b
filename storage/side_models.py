"""Tables of side questions (SPEC §9): one session row per parent conversation, and requests.

The session row holds the parent's latest agent-context snapshot (guarded by a
compare-and-set on the run's start time, run id and version), the clear generation, the
rolling summary of older side exchanges and the next ordinal. Requests are the side
questions themselves; a partial unique index allows one `running` request per parent.

A running request names the app process streaming it (`owner_instance`) and when that
process last showed it is alive (`heartbeat_at`, on the database clock where there is one).
Several replicas share the database, so recovery ends only rows whose heartbeat is stale,
never another live replica's answer.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlmodel import Field, SQLModel

from storage.models import utcnow

__all__ = ["RUNNING", "TERMINAL_STATUSES", "SideQuestionRequest", "SideQuestionSession"]

RUNNING = "running"
TERMINAL_STATUSES = ("completed", "failed", "cancelled", "interrupted")


def _parent_column(primary_key: bool = False) -> Column:
    return Column(String(64), ForeignKey("conversations.id", ondelete="CASCADE"),
                  primary_key=primary_key, nullable=False)


class SideQuestionSession(SQLModel, table=True):
    __tablename__ = "side_question_sessions"

    parent_id: str = Field(sa_column=_parent_column(primary_key=True))
    # The latest snapshot: messages, system prompt, tools, params, model and model digest.
    snapshot: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    snapshot_run_id: str | None = Field(default=None, max_length=64)
    snapshot_version: int = Field(default=0, sa_column=Column(Integer, nullable=False,
                                                              default=0))
    snapshot_run_started_at: float = Field(default=0.0, sa_column=Column(Float, nullable=False,
                                                                         default=0.0))
    snapshot_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    generation: int = Field(default=0, sa_column=Column(Integer, nullable=False, default=0))
    next_ordinal: int = Field(default=1, sa_column=Column(Integer, nullable=False, default=1))
    # Rolling summary of older side exchanges: {"text", "through_ordinal", "generation"}.
    summary: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    updated_at: datetime = Field(default_factory=utcnow,
                                 sa_column=Column(DateTime(timezone=True), nullable=False))


class SideQuestionRequest(SQLModel, table=True):
    __tablename__ = "side_question_requests"
    __table_args__ = (
        UniqueConstraint("parent_id", "generation", "client_request_id",
                         name="uq_side_requests_client_id"),
        Index("uq_side_requests_one_running", "parent_id", unique=True,
              sqlite_where=text("status = 'running'"),
              postgresql_where=text("status = 'running'")),
        Index("ix_side_requests_history", "parent_id", "ordinal"),
        # The recovery sweep reads only running rows, oldest heartbeat first.
        Index("ix_side_requests_running_heartbeat", "heartbeat_at",
              sqlite_where=text("status = 'running'"),
              postgresql_where=text("status = 'running'")),
    )

    id: str = Field(default_factory=lambda: uuid.uuid4().hex, primary_key=True, max_length=64)
    ordinal: int
    parent_id: str = Field(sa_column=_parent_column())
    generation: int
    client_request_id: str = Field(max_length=128)
    question: str = Field(sa_column=Column(Text, nullable=False))
    answer: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    status: str = Field(default=RUNNING, max_length=16)
    error: str | None = Field(default=None, sa_column=Column(Text))
    model: str = Field(default="", max_length=256)
    snapshot_run_id: str | None = Field(default=None, max_length=64)
    snapshot_version: int | None = None
    snapshot_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    usage: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    sequence: int = Field(default=1, sa_column=Column(Integer, nullable=False, default=1))
    context_info: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow,
                                 sa_column=Column(DateTime(timezone=True), nullable=False))
    finished_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    # The process streaming the answer, and its last sign of life (refreshed by every
    # progress write and by a touch when no tokens arrive); meaningful while `running`.
    owner_instance: str | None = Field(default=None, max_length=64)
    heartbeat_at: datetime | None = Field(default=None,
                                          sa_column=Column(DateTime(timezone=True)))
