"""NUL characters in a question or a model's answer must not fail a write on PostgreSQL."""

from __future__ import annotations

from sqlmodel import select

from storage import side_repository as repo
from storage.conversations import create_conversation
from storage.side_models import SideQuestionRequest


def test_nul_characters_are_dropped_from_question_answer_and_error(db) -> None:  # type: ignore[no-untyped-def]
    with db.session() as session:
        create_conversation(session=session, owner_id="u", conversation_id="p-nul")
        repo.ensure_session(session=session, parent_id="p-nul")
    with db.session() as session:
        created = repo.create_request(
            session=session, parent_id="p-nul", generation=0, client_request_id="c1",
            question="what\x00 now?", model="m", snapshot_run_id=None, snapshot_version=None,
            snapshot_at=None)
        assert created is not None
        request_id = created.id
    with db.session() as session:
        assert repo.update_request(session=session, request_id=request_id, generation=0,
                                   answer="half\x00 answer", error="bad\x00 thing")
    with db.session() as session:
        row = session.exec(select(SideQuestionRequest)).one()
    assert (row.question, row.answer, row.error) == ("what now?", "half answer", "bad thing")
