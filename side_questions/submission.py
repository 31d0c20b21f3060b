"""The database side of a side-question submission: synchronous work for a worker thread.

The usual submission is one transaction of two statements (`fast_insert`): an UPDATE that
takes the next ordinal and, in the same statement, checks that the caller owns the parent
and reads the generation and the snapshot's (run id, version); then the INSERT. The
snapshot's payload is read (and its JSON parsed) only when it is not the one the snapshot
store already holds for the parent. Whatever that path cannot decide on its own (no
snapshot, another owner, a changed model configuration, a repeated client id, a running
request, a stale row to sweep) rolls back and is decided by `SideQuestionService`'s checked
path, one question at a time and in the order of the HTTP contract.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from agent.errors import ConversationAccessError
from agent.inputs import clean_text
from side_questions.errors import Conflict, InvalidQuestion
from side_questions.snapshot_store import SnapshotStore, StoredSnapshot, stored_snapshot
from side_questions.views import SideRequestPublic, SubmitResult
from storage import Database
from storage import conversations as conv_repo
from storage import side_repository as repo
from storage.side_models import SideQuestionSession

__all__ = ["Created", "check_owner", "fast_insert", "insert", "lookup", "same", "validate"]

_CLIENT_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def validate(question: Any, client_request_id: Any, max_chars: int) -> tuple[str, str]:
    """The question as asked (cleaned, trimmed) and the client request id (a new one when
    none was given); InvalidQuestion otherwise."""
    if not isinstance(question, str):
        raise InvalidQuestion("question must be a string.")
    question = clean_text(question).strip()
    if not question:
        raise InvalidQuestion("Please type a side question.", kind="empty")
    if len(question) > max_chars:
        raise InvalidQuestion(f"The side question has {len(question):,} characters; the "
                              f"limit is {max_chars:,}.", kind="too_long")
    if client_request_id is None or client_request_id == "":
        client_request_id = uuid.uuid4().hex
    if not isinstance(client_request_id, str) or not _CLIENT_ID.match(client_request_id):
        raise InvalidQuestion("client_request_id must be 1-128 letters, digits or . _ : -")
    return question, client_request_id


@dataclass(frozen=True)
class Created:
    request: SideRequestPublic
    generation: int
    snapshot: StoredSnapshot


class _Undecided(Exception):
    """The fast path cannot decide this submission: roll back, take the checked path."""


def fast_insert(db: Database, snapshots: SnapshotStore, *, parent_id: str,
                owner_id: str | None, client_request_id: str, question: str,
                digest: str | None, instance_id: str) -> Created | None:
    """Insert a running request in one transaction when nothing stands in the way; None
    (nothing written) when the checked path must decide. `owner_id`: the parent must be
    theirs. `digest`: the current model identity the snapshot must have been taken with."""
    known = snapshots.frozen(parent_id)
    key = (known.run_id, known.version) if known is not None else None
    try:
        with db.session() as session:
            claim = repo.claim_ordinal(session=session, parent_id=parent_id,
                                       owner_id=owner_id, known=key)
            if claim is None or claim.snapshot_run_id is None:
                raise _Undecided  # another owner, or no snapshot yet
            if claim.snapshot:
                snapshot = snapshots.keep(stored_snapshot(
                    parent_id, run_id=claim.snapshot_run_id, version=claim.snapshot_version,
                    taken_at=claim.snapshot_at, data=claim.snapshot))
            elif known is not None and key == (claim.snapshot_run_id, claim.snapshot_version):
                snapshot = known
            else:
                raise _Undecided  # an empty payload
            if not snapshot.model_digest or snapshot.model_digest != digest:
                raise _Undecided
            row = repo.insert_running(
                session=session, parent_id=parent_id, generation=claim.generation,
                ordinal=claim.ordinal, client_request_id=client_request_id,
                question=question, model=snapshot.model, snapshot_run_id=snapshot.run_id,
                snapshot_version=snapshot.version, snapshot_at=snapshot.taken_at,
                owner_instance=instance_id)
            return Created(SideRequestPublic.from_values(row), claim.generation, snapshot)
    except (_Undecided, IntegrityError):  # a repeated client id, or a running request
        return None


def insert(db: Database, *, parent_id: str, generation: int, client_request_id: str,
           question: str, snapshot: StoredSnapshot, instance_id: str
           ) -> SideRequestPublic | None:
    """The checked path's insert (its own transaction); None when the parent was cleared
    since `lookup`. IntegrityError as `repo.create_request`."""
    with db.session() as session:
        row = repo.create_request(
            session=session, parent_id=parent_id, generation=generation,
            client_request_id=client_request_id, question=question, model=snapshot.model,
            snapshot_run_id=snapshot.run_id, snapshot_version=snapshot.version,
            snapshot_at=snapshot.taken_at, owner_instance=instance_id)
        return SideRequestPublic.from_row(row) if row is not None else None


def same(existing: SideRequestPublic, question: str) -> SubmitResult:
    """A repeated client request id: the same request again, if the question is the same."""
    if existing.question != question:
        raise Conflict("client_request_id_reused")
    return SubmitResult(existing, created=False)


def check_owner(db: Database, parent_id: str, owner_id: str | None) -> None:
    """ConversationAccessError unless the parent exists and is `owner_id`'s: a foreign
    parent and an unknown one look the same."""
    with db.read() as session:
        owned = conv_repo.is_owner(session=session, conversation_id=parent_id,
                                   owner_id=owner_id)
    if not owned:
        raise ConversationAccessError()


def lookup(db: Database, parent_id: str, client_request_id: str,
           ) -> tuple[int, SideRequestPublic | None, bool]:
    """(generation, the request with this client id in it or None, whether one is running)."""
    with db.read() as session:
        generation = session.exec(select(SideQuestionSession.generation).where(
            SideQuestionSession.parent_id == parent_id)).first() or 0
        existing = repo.find_request(session=session, parent_id=parent_id,
                                     generation=generation,
                                     client_request_id=client_request_id)
        busy = repo.running_request(session=session, parent_id=parent_id) is not None
        return (generation,
                SideRequestPublic.from_row(existing) if existing is not None else None, busy)

