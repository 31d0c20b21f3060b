"""A person's conversations: listed by last activity (newest first, paged by a keyset
cursor, searchable by title), renamed, deleted. Owner only: someone else's id answers the
same "Conversation not found." as an id that does not exist, so ids cannot be probed.

Deleting removes the conversation with everything stored under it (messages, runs,
approvals, side questions: the foreign keys cascade); the audit log keeps its rows, since
it records what happened in Superset, not the chat. A conversation with a run or a side
question in progress is refused with a clear reason instead: deleting under a live writer
would leave it writing into nothing.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import and_, delete, or_
from sqlmodel import Session, col, select

from agent.errors import ConversationAccessError, InputError
from agent.identity import Identity
from agent.inputs import clean_text
from storage import Database
from storage.models import Conversation
from storage.side_models import SideQuestionRequest

__all__ = ["PAGE_SIZE", "ConversationDirectory", "ConversationPage", "ConversationSummary"]

PAGE_SIZE = 20
MAX_TITLE_CHARS = 200
MAX_QUERY_CHARS = 100


class ConversationSummary(BaseModel):
    id: str
    title: str
    created_at: datetime
    updated_at: datetime


class ConversationPage(BaseModel):
    items: list[ConversationSummary]
    next_cursor: str | None = None  # pass back for the next (older) page; None: no more


class ConversationDirectory:
    """List, rename and delete the caller's conversations."""

    def __init__(self, db: Database, busy: Callable[[str], bool]) -> None:
        self.db = db
        self.busy = busy  # a main run is live or queued here (this process)

    def page(self, identity: Identity, *, query: str | None = None,
             cursor: str | None = None, limit: int = PAGE_SIZE) -> ConversationPage:
        if not 1 <= limit <= 100:
            raise InputError("limit must be between 1 and 100.")
        statement = select(Conversation).where(Conversation.owner_id == identity.user_id)
        text = clean_text(query or "").strip() if isinstance(query, str | None) else None
        if text is None or len(text) > MAX_QUERY_CHARS:
            raise InputError(f"query must be text of at most {MAX_QUERY_CHARS} characters.")
        if text:
            pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace(
                "_", "\\_") + "%"
            statement = statement.where(col(Conversation.title).ilike(pattern, escape="\\"))
        if cursor:
            updated, conv_id = _decode(cursor)
            statement = statement.where(or_(
                col(Conversation.updated_at) < updated,
                and_(col(Conversation.updated_at) == updated, col(Conversation.id) < conv_id)))
        statement = statement.order_by(col(Conversation.updated_at).desc(),
                                       col(Conversation.id).desc()).limit(limit + 1)
        with self.db.session() as session:
            rows = list(session.exec(statement))
        items = [_summary(row) for row in rows[:limit]]
        more = len(rows) > limit
        return ConversationPage(items=items,
                                next_cursor=_encode(items[-1]) if more and items else None)

    def rename(self, identity: Identity, conv_id: str, title: str) -> ConversationSummary:
        text = clean_text(title).strip() if isinstance(title, str) else ""
        if not text or len(text) > MAX_TITLE_CHARS:
            raise InputError(f"A title needs 1 to {MAX_TITLE_CHARS} characters.")
        with self.db.session() as session:
            conversation = self._owned(session, identity, conv_id)
            conversation.title = text
            session.add(conversation)
            session.flush()
            return _summary(conversation)

    def delete(self, identity: Identity, conv_id: str) -> None:
        with self.db.session() as session:
            self._owned(session, identity, conv_id)
            side_running = session.exec(select(SideQuestionRequest.id).where(
                SideQuestionRequest.parent_id == conv_id,
                SideQuestionRequest.status == "running").limit(1)).first()
            if self.busy(conv_id) or side_running is not None:
                raise InputError("This conversation has a run or a side question in "
                                 "progress; stop it first, then delete.")
            session.execute(delete(Conversation).where(col(Conversation.id) == conv_id))

    @staticmethod
    def _owned(session: Session, identity: Identity, conv_id: str) -> Conversation:
        conversation = session.get(Conversation, conv_id) if isinstance(conv_id, str) \
            else None
        if conversation is None or conversation.owner_id != identity.user_id:
            raise ConversationAccessError()
        return conversation


def _summary(row: Conversation) -> ConversationSummary:
    return ConversationSummary(id=row.id, title=row.title, created_at=row.created_at,
                               updated_at=row.updated_at)


def _encode(item: ConversationSummary) -> str:
    raw = f"{item.updated_at.isoformat()}|{item.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str) -> tuple[datetime, str]:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, conv_id = text.split("|", 1)
        return datetime.fromisoformat(stamp), conv_id
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InputError("cursor is not valid; start again without one.") from None
