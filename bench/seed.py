"""Database set-up for the benchmarks, through the storage layer: private PostgreSQL schemas
(dropped afterwards), long conversations copied from a real turn, and side-question history.

Rows are written in bulk with the storage models' tables (one executemany per batch), so
100 000 rows take seconds; their shape is the app's own, copied from what it wrote.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from sqlalchemy import create_engine, insert, text, update

from storage import Database
from storage import conversations as conv_repo
from storage import side_repository as side_repo
from storage.models import Conversation, Message, Run, utcnow
from storage.side_models import SideQuestionRequest, SideQuestionSession
from tests.conftest import POSTGRES_URL, postgres_problem  # TEST_POSTGRES_URL overrides

__all__ = ["POSTGRES_URL", "copy_turns", "postgres_problem", "postgres_schemas",
           "seed_side_history"]

_BATCH = 5_000


@contextlib.contextmanager
def postgres_schemas(count: int) -> Iterator[list[str]]:
    """`count` URLs whose connections use fresh private schemas, dropped on the way out
    (none, and no connection, for 0)."""
    if count == 0:
        yield []
        return
    names = [f"bench_{uuid.uuid4().hex[:12]}" for _ in range(count)]
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    separator = "&" if "?" in POSTGRES_URL else "?"
    try:
        with admin.connect() as connection:
            for name in names:
                connection.execute(text(f'CREATE SCHEMA "{name}"'))
        yield [f"{POSTGRES_URL}{separator}options=-csearch_path%3D{name}" for name in names]
    finally:
        with admin.connect() as connection:
            for name in names:
                connection.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
        admin.dispose()


def _bulk(db: Database, table: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), _BATCH):
        with db.session() as session:
            session.execute(insert(table), rows[start:start + _BATCH])


def copy_turns(database_url: str, source: str, owner: str, messages: int) -> tuple[str, int]:
    """A new conversation of `owner` holding at least `messages` earlier messages: the whole
    turns of conversation `source` repeated, each with a run of its own. Returns its id and
    how many messages it got (whole turns, so a tool call never loses its result)."""
    db = Database(database_url)
    try:
        with db.session() as session:
            template = conv_repo.list_messages(session=session, conversation_id=source)
            runs = {run_id: conv_repo.get_run(session=session, run_id=run_id)
                    for run_id in {m.run_id for m in template if m.run_id}}
            conv_id = conv_repo.create_conversation(
                session=session, owner_id=owner, title=f"{messages} earlier messages").id
        rows: list[dict[str, Any]] = []
        run_rows: list[dict[str, Any]] = []
        start = utcnow() - timedelta(days=30)
        while len(rows) < messages:
            copies = {old: uuid.uuid4().hex for old in runs}
            for old, new in copies.items():
                run = runs[old]
                assert run is not None
                at = start + timedelta(seconds=len(run_rows))
                run_rows.append({**run.model_dump(), "id": new, "conversation_id": conv_id,
                                 "user_id": owner, "started_at": at, "ended_at": at})
            for message in template:
                rows.append({**message.model_dump(exclude={"id"}), "conversation_id": conv_id,
                             "seq": len(rows) + 1, "run_id": copies.get(message.run_id or "")})
        _bulk(db, Run.__table__, run_rows)
        _bulk(db, Message.__table__, rows)
        with db.session() as session:  # appends number on from the conversation's counter
            session.execute(update(Conversation.__table__)
                            .where(Conversation.__table__.c.id == conv_id)
                            .values(last_seq=len(rows)))
        return conv_id, len(rows)
    finally:
        db.dispose()


def seed_side_history(database_url: str, owner: str, rows: int) -> str:
    """A new conversation of `owner` with `rows` completed side questions; returns its id."""
    db = Database(database_url)
    try:
        with db.session() as session:
            parent = conv_repo.create_conversation(session=session, owner_id=owner,
                                                   title=f"{rows} side questions").id
            side_repo.ensure_session(session=session, parent_id=parent)
        now = utcnow()
        _bulk(db, SideQuestionRequest.__table__, [
            {"id": uuid.uuid4().hex, "ordinal": n, "parent_id": parent, "generation": 0,
             "client_request_id": f"seed-{n}", "question": f"seeded side question {n}",
             "answer": f"The answer to seeded side question {n}.", "status": "completed",
             "model": "offline-agent/superset-demo", "usage": {}, "context_info": {},
             "sequence": 2, "created_at": now, "finished_at": now}
            for n in range(1, rows + 1)])
        with db.session() as session:
            session.execute(update(SideQuestionSession.__table__)
                            .where(SideQuestionSession.__table__.c.parent_id == parent)
                            .values(next_ordinal=rows + 1))
        return parent
    finally:
        db.dispose()
