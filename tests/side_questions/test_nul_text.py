"""NUL characters in a question or a model's answer must not fail a write on PostgreSQL."""

from __future__ import annotations

from sqlmodel import select

from storage import side_repository as repo
from storage.side_models import SideQuestionRequest
from tests.side_questions.conftest import stored_request


def test_nul_characters_are_dropped_from_question_answer_and_error(db) -> None:  # type: ignore[no-untyped-def]
    request_id = stored_request(db, "p-nul", question="what\x00 now?")
    with db.session() as session:
        assert repo.update_request(session=session, request_id=request_id, generation=0,
                                   answer="half\x00 answer", error="bad\x00 thing")
    with db.session() as session:
        row = session.exec(select(SideQuestionRequest)).one()
    assert (row.question, row.answer, row.error) == ("what now?", "half answer", "bad thing")
