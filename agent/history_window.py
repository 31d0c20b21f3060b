"""What the chat shows of a conversation: its newest messages, read in one bounded query.

A conversation can hold tens of thousands of messages; opening it, reloading the page and
every streamed update of a turn read and render only a window of the newest ones (the
model's side is bounded separately, `agent/prompt_window.py`). The window starts at a user
message, so a turn is whole; the page offers "Show earlier messages" for the rest, and
programs page back with a cursor (`before_seq`). Open approvals are read apart from the
window (there are few), so one older than the window still shows as awaiting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.admission import CONV_ID
from agent.errors import ConversationAccessError
from agent.identity import Identity
from storage import confirmations as confirmations_repo
from storage import conversations as repo
from storage.db import Database
from storage.models import Message

__all__ = ["HISTORY_WINDOW_MESSAGES", "HistoryWindow", "PendingCall", "read_window"]

# Stored messages (user, assistant, tool) the chat shows of a conversation, a click on
# "Show earlier messages" adds, and a page of `/conversation_history` holds: the one place
# this limit lives (README, "Limits"). 50 is about 12 one-tool turns or 25 plain ones,
# more than a screen. Measured (bench/history.py, 9 rounds): a turn with 10 000 earlier
# messages took 1.08x the same turn with 10 at 50, 1.24-1.29x at 100 (every streamed
# update still carries the whole window through Gradio's postprocessing and diff).
HISTORY_WINDOW_MESSAGES = 50


@dataclass(frozen=True)
class PendingCall:
    """A call waiting for a person's decision (an open approval request)."""

    call_id: str
    tool: str
    args: dict[str, Any]


@dataclass
class HistoryWindow:
    """Stored messages `rows` (oldest first), how many come before them, and the open
    approvals of the whole conversation."""

    rows: list[Message] = field(default_factory=list)
    earlier: int = 0
    awaiting: list[PendingCall] = field(default_factory=list)

    @property
    def start_seq(self) -> int | None:
        return self.rows[0].seq if self.rows else None

    @property
    def awaiting_ids(self) -> set[str]:
        return {call.call_id for call in self.awaiting}


def read_window(db: Database, identity: Identity, conv_id: str, *,
                limit: int = HISTORY_WINDOW_MESSAGES, before_seq: int | None = None,
                from_seq: int | None = None) -> HistoryWindow:
    """The window of a conversation the caller owns (empty when it is not stored yet).

    Default: the newest `limit` messages, from a user message. `before_seq`: the same,
    older than that message (a program's next page). `from_seq`: every message from that
    one on (a chat the person extended)."""
    if not conv_id or not CONV_ID.match(conv_id):
        return HistoryWindow()
    with db.read() as session:  # reads only: no transaction, no commit
        conversation = repo.get_conversation(session=session, conversation_id=conv_id)
        if conversation is None:
            return HistoryWindow()
        if conversation.owner_id != identity.user_id:
            raise ConversationAccessError()
        if from_seq is not None:
            rows = repo.list_messages_from(session=session, conversation_id=conv_id,
                                           from_seq=from_seq)
        else:
            rows = repo.list_message_window(session=session, conversation_id=conv_id,
                                            limit=limit, before_seq=before_seq)
        earlier = repo.messages_before(rows[0].seq) if rows else 0
        awaiting = [PendingCall(row.call_id, row.tool, dict(row.args or {}))
                    for row in confirmations_repo.list_pending(session=session,
                                                               conversation_id=conv_id)]
    return HistoryWindow(rows=rows, earlier=earlier, awaiting=awaiting)
