"""Graceful shutdown of the whole runtime: pending snapshots are saved before it closes."""

from __future__ import annotations

from sqlmodel import select

from runtime import build_runtime
from storage.side_models import SideQuestionSession
from tests.fakes.runs import collect


async def test_aclose_saves_the_pending_snapshot(settings) -> None:  # type: ignore[no-untyped-def]
    runtime = build_runtime(settings)
    live = await runtime.agent.start_turn(message="what can you do?", conv_id="c-shutdown",
                                          user_id="", user_jwt="", env_id="ss-dev",
                                          uicontext_str=None)
    await collect(live)
    await runtime.aclose()
    reopened = build_runtime(settings)
    try:
        with reopened.db.session() as session:
            rows = session.exec(select(SideQuestionSession).where(
                SideQuestionSession.parent_id == "c-shutdown")).all()
        assert rows and rows[0].snapshot is not None
    finally:
        reopened.close()
