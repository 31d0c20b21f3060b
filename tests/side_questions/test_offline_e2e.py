"""End to end with the offline model: a main run publishes a snapshot, a side question is
answered from it through LiteLLMGateway, and the main transcript is untouched."""

from __future__ import annotations

import asyncio

from runtime import build_runtime
from storage import conversations as conv_repo
from tests.side_questions.conftest import finished


async def test_offline_model_answers_side_question(settings, db) -> None:  # type: ignore[no-untyped-def]
    runtime = build_runtime(settings, database=db)
    side = runtime.side_questions
    try:
        live = await runtime.agent.start_turn(
            message="what can you do?", conv_id="c-off", user_id=None, user_jwt=None,
            env_id=None, uicontext_str=None)
        await asyncio.wait_for(live.finished.wait(), 60)
        assert live.status == "completed"
        with db.session() as session:
            before = len(conv_repo.list_messages(session=session, conversation_id="c-off"))
        result = await side.submit(parent_id="c-off", question="What did you just do?",
                                   client_request_id="e2e")
        final = await finished(side, result.request.id)
        assert final.status == "completed" and final.answer.strip()
        assert final.model == settings.agent_model
        with db.session() as session:
            after = len(conv_repo.list_messages(session=session, conversation_id="c-off"))
        assert after == before  # never writes to the main transcript
    finally:
        await side.aclose()
