"""The rolling summary of a conversation's older turns: what the model gets instead of them.

One row per conversation: the summary text and the `seq` of the last message folded into
it, so the next step reads only the messages after it and a later fold extends the summary
instead of redoing it. It is model input, never transcript: the history the UI shows is
the `messages` table, untouched. A table of its own, deleted with its conversation.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, DateTime, ForeignKey, String, Text, update
from sqlmodel import Field, Session, SQLModel, col

from storage.models import utcnow
from storage.text import strip_nul

__all__ = ["ConversationSummary", "get_summary", "save_summary"]


class ConversationSummary(SQLModel, table=True):
    __tablename__ = "conversation_summaries"

    conversation_id: str = Field(sa_column=Column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True))
    text: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    through_seq: int = 0  # messages with seq <= this are in `text`
    model: str = Field(default="", max_length=256)  # the model that wrote it
    updated_at: datetime = Field(default_factory=utcnow,
                                 sa_column=Column(DateTime(timezone=True), nullable=False))


def get_summary(*, session: Session, conversation_id: str) -> ConversationSummary | None:
    return session.get(ConversationSummary, conversation_id)


def save_summary(*, session: Session, conversation_id: str, text: str, through_seq: int,
                 model: str) -> bool:
    """Store the summary if it reaches further than the stored one (a summary only moves
    forward: a late write of an older fold loses); True when it was stored."""
    values = {"text": strip_nul(text) or "", "through_seq": through_seq,
              "model": model[:256], "updated_at": utcnow()}
    moved = session.execute(
        update(ConversationSummary)
        .where(col(ConversationSummary.conversation_id) == conversation_id,
               col(ConversationSummary.through_seq) < through_seq)
        .values(**values))
    if moved.rowcount == 1:  # type: ignore[attr-defined]
        return True
    if session.get(ConversationSummary, conversation_id) is not None:
        return False
    session.add(ConversationSummary(conversation_id=conversation_id, **values))
    session.flush()
    return True
