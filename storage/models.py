"""Tables of the main conversation store: conversations, structured messages and runs.

Later capabilities add their tables in their own modules (confirmations, audit,
side questions); `storage/__init__.py` imports them all so the schema is complete.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlmodel import Field, SQLModel

__all__ = ["Conversation", "Message", "Run", "utcnow"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def _ts_column(**kwargs: Any) -> Column:
    return Column(DateTime(timezone=True), nullable=False, **kwargs)


class Conversation(SQLModel, table=True):
    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_owner_updated", "owner_id", "updated_at"),)

    id: str = Field(default_factory=lambda: str(uuid.uuid4()), primary_key=True, max_length=64)
    owner_id: str = Field(max_length=128)
    title: str = Field(default="New conversation", max_length=200)
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts_column())
    updated_at: datetime = Field(default_factory=utcnow, sa_column=_ts_column())
    # The seq of the conversation's newest message: appending bumps it (UPDATE … RETURNING),
    # which numbers messages without a `max(seq)` read and queues concurrent appenders on
    # this row instead of failing one of them on the unique (conversation, seq) key.
    last_seq: int = Field(default=0, sa_column=Column(Integer, nullable=False,
                                                      server_default="0"))


class Message(SQLModel, table=True):
    """One structured chat message; prompts are rebuilt from these rows, in `seq` order."""

    __tablename__ = "messages"
    __table_args__ = (UniqueConstraint("conversation_id", "seq", name="uq_messages_conv_seq"),)

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
        )
    )
    seq: int
    run_id: str | None = Field(default=None, max_length=64)
    role: str = Field(max_length=16)  # user | assistant | tool
    content: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    tool_calls: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    tool_call_id: str | None = Field(default=None, max_length=128)
    tool_name: str | None = Field(default=None, max_length=64)
    # Display-only details of a tool step (status, duration, error kind); never sent to the model.
    meta: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow, sa_column=_ts_column())


class Run(SQLModel, table=True):
    """One agent run (a turn and its continuations): which model ran and how it ended."""

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_conversation_started", "conversation_id", "started_at"),)

    id: str = Field(primary_key=True, max_length=64)
    conversation_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
        )
    )
    user_id: str = Field(max_length=128)
    status: str = Field(default="running", max_length=32)
    model: str = Field(max_length=256)
    env_id: str | None = Field(default=None, max_length=64)
    usage: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    error: str | None = Field(default=None, sa_column=Column(Text))
    started_at: datetime = Field(default_factory=utcnow, sa_column=_ts_column())
    ended_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
