"""The pending-confirmation table (SPEC §6): one row per write call waiting for a person.

The row is the checkpoint of a paused run: everything needed to decide and to resume
(tool, arguments, environment, risk axes, the page context) lives here, so a restart loses
nothing. Times are epoch seconds (floats) so that expiry comparisons are exact in SQL on
both SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import JSON, Column, Float, ForeignKey, Index, String, Text
from sqlmodel import Field, SQLModel

__all__ = ["PENDING", "Confirmation"]

PENDING = "pending"
# Status values: pending -> approved | denied | expired | superseded (set once, atomically).


class Confirmation(SQLModel, table=True):
    __tablename__ = "confirmations"
    __table_args__ = (Index("ix_confirmations_conv_status", "conversation_id", "status"),)

    id: str = Field(default_factory=lambda: uuid.uuid4().hex, primary_key=True, max_length=64)
    conversation_id: str = Field(sa_column=Column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False))
    user_id: str = Field(max_length=128)
    run_id: str = Field(max_length=64)
    call_id: str = Field(max_length=128)
    tool: str = Field(max_length=64)
    args: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    env_id: str | None = Field(default=None, max_length=64)
    tool_risk: str = Field(max_length=16)
    env_risk: str | None = Field(default=None, max_length=16)
    permission_risk: str = Field(max_length=32)
    dangerous: bool = False
    countdown_s: int = 0
    summary: str = Field(sa_column=Column(Text, nullable=False))
    # How to resume: the run's environment, tier and sanitised page context.
    resume: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    status: str = Field(default=PENDING, max_length=16)
    created_ts: float = Field(sa_column=Column(Float, nullable=False))
    expires_ts: float = Field(sa_column=Column(Float, nullable=False))
    decided_ts: float | None = Field(default=None, sa_column=Column(Float))
    decided_by: str | None = Field(default=None, max_length=128)
    outcome: str | None = Field(default=None, sa_column=Column(Text))
