"""Repository functions for conversations, messages and runs (keyword-only, session first)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, timedelta
from typing import Any

from sqlalchemy import case, func, insert, update
from sqlmodel import Session, col, select

from storage.models import Conversation, Message, Run, utcnow
from storage.text import strip_nul

__all__ = [
    "append_message",
    "append_messages",
    "create_conversation",
    "finish_run",
    "get_conversation",
    "get_run",
    "is_owner",
    "latest_user_message",
    "list_message_window",
    "list_messages",
    "list_messages_from",
    "list_prompt_window",
    "message_row",
    "messages_before",
    "reserve_seqs",
    "start_run",
    "touch_conversation",
]


_text = strip_nul
_CONVERSATIONS, _MESSAGES, _RUNS = Conversation.__table__, Message.__table__, Run.__table__
_CONVERSATION_WRITTEN = tuple(column.name for column in _CONVERSATIONS.columns)


def get_conversation(*, session: Session, conversation_id: str) -> Conversation | None:
    return session.get(Conversation, conversation_id)


def is_owner(*, session: Session, conversation_id: str, owner_id: str | None) -> bool:
    """Whether the conversation exists and is `owner_id`'s (a foreign conversation and an
    unknown one answer the same)."""
    conversation = session.get(Conversation, conversation_id)
    return conversation is not None and conversation.owner_id == owner_id


def create_conversation(
    *, session: Session, owner_id: str, conversation_id: str | None = None, title: str | None = None
) -> Conversation:
    """A new conversation, returned as written: one Core INSERT, not the ORM's unit of work
    (a newcomer's first turn creates it in its claim's transaction). An id that exists
    raises `IntegrityError` here, as the flush did."""
    conversation = Conversation(owner_id=owner_id,
                                title=(_text(title) or "New conversation")[:200])
    if conversation_id:
        conversation.id = conversation_id
    session.execute(insert(_CONVERSATIONS).values(
        {name: getattr(conversation, name) for name in _CONVERSATION_WRITTEN}))
    return conversation


def touch_conversation(*, session: Session, conversation_id: str, title: str | None = None) -> None:
    """The conversation was active now; `title` names it if it still has the default name.
    One Core UPDATE (no row loaded first): it runs in every run's final transaction."""
    table = Conversation.__table__
    values: dict[str, Any] = {"updated_at": utcnow()}
    named = (_text(title) or "")[:200]
    if named:
        values["title"] = case((table.c.title == "New conversation", named),
                               else_=table.c.title)
    session.execute(update(table).where(table.c.id == conversation_id).values(**values))


def list_messages(*, session: Session, conversation_id: str) -> Sequence[Message]:
    statement = (
        select(Message)
        .where(Message.conversation_id == conversation_id)
        .order_by(col(Message.seq))
    )
    return session.exec(statement).all()


def list_message_window(*, session: Session, conversation_id: str, limit: int,
                        before_seq: int | None = None) -> list[Message]:
    """The newest `limit` messages (before `before_seq` when given), oldest first: what the
    chat shows of a long conversation. When older messages exist the window starts at a
    user message, so a turn (a call and its result) is never cut in two; a turn longer
    than `limit` is shown from its newest `limit` rows. One indexed range read of at most
    `limit` rows (the (conversation, seq) key), however long the conversation is."""
    query = select(Message).where(Message.conversation_id == conversation_id)
    if before_seq is not None:
        query = query.where(Message.seq < before_seq)
    window = list(reversed(session.exec(
        query.order_by(col(Message.seq).desc()).limit(limit)).all()))
    if len(window) < limit:
        return window  # the conversation's (or the page's) beginning is in it
    starts = next((index for index, row in enumerate(window) if row.role == "user"), None)
    return window[starts:] if starts else window


def list_messages_from(*, session: Session, conversation_id: str, from_seq: int
                       ) -> list[Message]:
    """Every message from `from_seq` on, oldest first (a chat the person extended with
    "Show earlier messages": its length is theirs to choose; a run's own messages)."""
    return list(session.exec(select(Message).where(
        Message.conversation_id == conversation_id, Message.seq >= from_seq)
        .order_by(col(Message.seq))).all())


def messages_before(seq: int) -> int:
    """How many messages of its conversation come before message number `seq`: `seq - 1`,
    with no read. A conversation's messages are numbered 1, 2, 3, … without a gap: every
    append takes the next numbers from the conversation's counter in the transaction that
    inserts them (`reserve_seqs`; before the counter, `max(seq) + 1`), so a rolled-back
    append gives its numbers back with the counter's UPDATE, and no message is ever deleted
    on its own (a conversation goes whole, its messages with it; a feature deleting single
    messages would have to renumber or count again). The COUNT this replaces walked the
    index over every earlier message on each turn, reload and page of the chat: 1.8 ms at
    10 000 messages on SQLite, growing with the conversation."""
    return max(0, seq - 1)


def list_prompt_window(*, session: Session, conversation_id: str, run_id: str,
                       earlier: int, after_seq: int = 0) -> tuple[list[Message], list[Message]]:
    """What a step of run `run_id` reads, in two parts: at most `earlier` messages before
    the run, and every message of the run itself, all after `after_seq` (what a rolling
    summary already holds). A window cut by `earlier` starts at a user message (a whole
    turn), so the rows read are bounded however long the conversation is (two indexed
    range reads). The run's part is empty while the run has no message yet."""
    # Only rows after `after_seq` are looked at: the run's rows are the conversation's
    # newest, so its first one past the summary is the same bound for the reads below,
    # and the scan (run_id has no index) stays within the unsummarised tail instead of
    # walking every message of a long conversation.
    first_of_run = session.exec(
        select(func.min(Message.seq)).where(Message.conversation_id == conversation_id,
                                            Message.seq > after_seq,
                                            Message.run_id == run_id)).one()
    before = select(Message).where(Message.conversation_id == conversation_id,
                                   Message.seq > after_seq)
    if first_of_run is not None:
        before = before.where(Message.seq < first_of_run)
    window = list(reversed(session.exec(
        before.order_by(col(Message.seq).desc()).limit(earlier)).all()))
    starts = next((index for index, row in enumerate(window) if row.role == "user"), None)
    if starts is not None and window and window[0].seq > after_seq + 1:  # cut mid-turn
        window = window[starts:]
    if first_of_run is None:
        return window, []
    return window, list_messages_from(session=session, conversation_id=conversation_id,
                                      from_seq=first_of_run)


def latest_user_message(*, session: Session, conversation_id: str) -> Message | None:
    """The conversation's newest user message (the request a run answers)."""
    return session.exec(select(Message).where(
        Message.conversation_id == conversation_id, Message.role == "user")
        .order_by(col(Message.seq).desc()).limit(1)).first()


def reserve_seqs(*, session: Session, conversation_id: str, count: int) -> int:
    """The first of `count` new message numbers of the conversation, from its counter.

    One `UPDATE … RETURNING`: no `max(seq)` read two appenders could make at once. On
    PostgreSQL the row stays locked until the transaction ends, so a concurrent appender
    waits and then numbers after this one; SQLite runs one writer at a time anyway."""
    table = Conversation.__table__  # Core: no ORM sync of a loaded Conversation's counter
    last = session.execute(
        update(table).where(table.c.id == conversation_id)
        .values(last_seq=table.c.last_seq + count).returning(table.c.last_seq)).scalar()
    if last is None:
        raise LookupError(f"no conversation {conversation_id!r} to append messages to")
    return int(last) - count + 1


_WRITTEN = tuple(column.name for column in _MESSAGES.columns if column.name != "id")
_RUN_WRITTEN = tuple(column.name for column in _RUNS.columns)


def append_messages(*, session: Session, conversation_id: str,
                    messages: Sequence[dict[str, Any]]) -> list[Message]:
    """Append several messages in order, numbered by one counter bump; each dict holds the
    keyword arguments of `append_message` after `conversation_id`. The rows are returned as
    written, without their ids: one Core INSERT, not the ORM's unit of work (nobody reads
    a new message's id; 1.1-1.4 → 0.75 ms for a step's two messages on SQLite, in-process),
    as every turn writes its messages two or three times."""
    if not messages:
        return []
    first = reserve_seqs(session=session, conversation_id=conversation_id,
                         count=len(messages))
    rows = [message_row(conversation_id, first + offset, **fields)
            for offset, fields in enumerate(messages)]
    session.execute(insert(_MESSAGES), [{name: getattr(row, name) for name in _WRITTEN}
                                        for row in rows])
    return rows


def append_message(*, session: Session, conversation_id: str, **fields: Any) -> Message:
    """Append one message at the conversation's next number (`append_messages`). Fields:
    role, content, run_id, tool_calls, tool_call_id, tool_name, meta."""
    return append_messages(session=session, conversation_id=conversation_id,
                           messages=[fields])[0]


def message_row(conversation_id: str, seq: int, *, role: str, content: str = "",
                run_id: str | None = None, tool_calls: list[dict[str, Any]] | None = None,
                tool_call_id: str | None = None, tool_name: str | None = None,
                meta: dict[str, Any] | None = None) -> Message:
    """A message's row as `append_messages` writes it (and a read gives it back); a run's
    prompt window builds its next prompt from these before they are written."""
    return Message(conversation_id=conversation_id, seq=seq, run_id=run_id, role=role,
                   content=_text(content) or "", tool_calls=tool_calls,
                   tool_call_id=_text(tool_call_id), tool_name=_text(tool_name), meta=meta)


def start_run(
    *, session: Session, run_id: str, conversation_id: str, user_id: str, model: str,
    env_id: str | None, first: bool = False,
) -> Run:
    """The run's row. `first`: the conversation was created in this transaction, so it has
    no earlier run to start after (its read is skipped)."""
    # Runs of a conversation are ordered by `started_at`, and snapshots by it too: taken
    # from the database (after the conversation's latest run), not from this replica's
    # clock alone, so a replica whose clock runs behind cannot order a newer run first.
    # The caller holds the conversation's run lease, so no other run starts meanwhile.
    latest = None if first else session.exec(
        select(func.max(Run.started_at)).where(Run.conversation_id == conversation_id)).one()
    started = utcnow()
    if latest is not None:
        latest = latest if latest.tzinfo else latest.replace(tzinfo=UTC)
        started = max(started, latest + timedelta(milliseconds=1))
    run = Run(id=run_id, conversation_id=conversation_id, user_id=user_id, model=model,
              env_id=env_id, started_at=started)
    session.execute(insert(_RUNS).values({name: getattr(run, name) for name in _RUN_WRITTEN}))
    return run  # as written (a Core INSERT, as for messages: no unit of work)


def finish_run(
    *, session: Session, run_id: str, status: str, usage: dict[str, Any] | None,
    error: str | None,
) -> None:
    """The run's end. One Core UPDATE (no row loaded first), in the run's final transaction."""
    table = Run.__table__
    session.execute(update(table).where(table.c.id == run_id).values(
        status=status, usage=usage, error=_text(error), ended_at=utcnow()))


def get_run(*, session: Session, run_id: str) -> Run | None:
    return session.get(Run, run_id)
