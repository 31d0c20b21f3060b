"""The numbers and rules of SPEC §9 that neighbouring behaviour used to hide, one test each.

Each test is built so that breaking exactly its rule changes the outcome: a race that only
the partial unique index can decide, a context big enough that a retry after partial
output *would* shrink, more summary material than 12 calls can fold, a stream that drips
slower than the whole-request budget but fast enough for every per-call read timeout, a
snapshot that is still only in memory when the question is asked, and exactly one page of
history.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from sqlmodel import select

from agent.model_gateway import LiteLLMGateway
from agent.settings import Settings
from agent.snapshots import make_snapshot
from side_questions.errors import Conflict
from side_questions.service import PAGE_SIZE, SideQuestionService
from side_questions.snapshot_store import SnapshotStore
from storage import Database
from storage import side_repository as repo
from storage.side_models import SideQuestionRequest
from tests.side_questions.conftest import (
    SYSTEM_PROMPT,
    ErrorAfterReply,
    SideServer,
    finished,
    main_messages,
    seed_parent,
    side_settings,
)
from tests.side_questions.race_support import OrdinalClaimGate


async def _finished_within(service: SideQuestionService, request_id: str, seconds: float
                           ) -> Any:
    """The final state, or a test failure (not a hang) when the request outlives `seconds`."""
    try:
        return await asyncio.wait_for(finished(service, request_id), timeout=seconds)
    except TimeoutError:
        pytest.fail(f"side question {request_id} still running after {seconds:g} s")


def _running_rows(db: Database, parent: str) -> list[SideQuestionRequest]:
    with db.session() as session:
        return list(session.exec(select(SideQuestionRequest).where(
            SideQuestionRequest.parent_id == parent,
            SideQuestionRequest.status == "running")).all())


# one running side question per parent: the partial unique index ---------------------------


async def test_two_replicas_racing_one_parent_get_one_running_and_one_conflict(
    db: Database, database_url: str, server: SideServer, gateway: LiteLLMGateway
) -> None:
    other_db = Database(database_url)  # the second replica: its own engine and pool
    services = [SideQuestionService(
        settings=side_settings(database_url, server, side_replica_name=f"replica-{name}"),
        db=database, gateway=gateway, snapshots=SnapshotStore(database))
        for name, database in (("a", db), ("b", other_db))]
    seed_parent(db, services[0].settings)
    held = server.reply_text("the one answer", deltas=2, hold_after=2)
    gate = OrdinalClaimGate(db.engine, other_db.engine)
    try:
        outcomes = await asyncio.gather(*[
            service.submit(parent_id="conv-1", question=f"Asked on replica {index}?",
                           client_request_id=f"fresh-{index}")
            for index, service in enumerate(services)], return_exceptions=True)
        gate.close()
        created = [o for o in outcomes if not isinstance(o, BaseException)]
        refused = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(created) == 1 and len(refused) == 1, outcomes
        assert isinstance(refused[0], Conflict) and refused[0].kind == "busy", refused
        assert "already running" in str(refused[0])  # the clear 409 message
        running = _running_rows(db, "conv-1")
        assert [row.id for row in running] == [created[0].request.id]
        held.release.set()
        winner = services[outcomes.index(created[0])]
        final = await _finished_within(winner, created[0].request.id, 30)
        assert final.status == "completed" and final.answer == "the one answer"
    finally:
        gate.close()
        held.release.set()
        for service in services:
            await service.aclose()
        other_db.dispose()


# no smaller retry after partial output -------------------------------------------------


async def test_no_overflow_retry_after_partial_output_even_when_it_would_shrink(
    side_factory, db: Database, server: SideServer  # type: ignore[no-untyped-def]
) -> None:
    """The same large context as the before-output retry test (where a retry does shrink
    and succeeds): once text has streamed, the overflow ends the request instead."""
    service = side_factory(agent_context_window=16_384)
    seed_parent(db, service.settings, messages=main_messages(turns=6, size=1400))
    server.push(ErrorAfterReply(text="partial answer", text_deltas=2, error_after=2))
    server.reply_text("SHORT-SUMMARY")  # what a forbidden retry would consume
    server.reply_text("a second answer")
    result = await service.submit(parent_id="conv-1", question="Q", client_request_id="p")
    final = await _finished_within(service, result.request.id, 30)
    assert final.status == "failed" and final.answer == "partial"
    assert "context" in (final.error or "").lower()
    assert len(server.side_requests()) == 1 and server.summary_requests() == []
    assert server.pending == 2 and "retried_after_overflow" not in final.context_info


# at most 12 summary calls per request ---------------------------------------------------


def _seed_long_exchanges(db: Database, parent: str, count: int, answer_chars: int) -> None:
    with db.session() as session:
        for number in range(1, count + 1):
            row = repo.create_request(
                session=session, parent_id=parent, generation=0,
                client_request_id=f"old{number}", question=f"Q{number}?", model="m",
                snapshot_run_id=None, snapshot_version=None, snapshot_at=None)
            assert row is not None
            session.flush()
            repo.update_request(session=session, request_id=row.id, generation=0,
                                status="completed",
                                answer=f"A{number} " + "x" * answer_chars)


async def test_at_most_12_summary_calls_for_side_history_and_main_context_together(
    side_factory, db: Database, server: SideServer  # type: ignore[no-untyped-def]
) -> None:
    """A 6000-token window: chunks of ~9 300 characters hold three 3 000-character
    exchanges, so 45 exchanges outside the replay window need 15 calls, and the long main
    context would need more: 12 are made, in all, and what did not fit is said to be left
    out (the oldest exchanges)."""
    service = side_factory(agent_context_window=6000, agent_max_output_tokens=1024)
    seed_parent(db, service.settings, messages=main_messages(turns=6, size=1400))
    _seed_long_exchanges(db, "conv-1", 46, answer_chars=3000)
    for number in range(1, 13):
        server.reply_text(f"SUMMARY-{number}")
    server.reply_text("the answer")  # a 13th summary call would take this one
    result = await service.submit(parent_id="conv-1", question="new?", client_request_id="n")
    final = await _finished_within(service, result.request.id, 40)
    assert final.status == "completed" and final.answer == "the answer", final.error
    summaries = server.summary_requests()
    assert len(summaries) == 12 and final.usage["summary_calls"] == 12
    assert final.usage["calls"] == 13 and len(server.side_requests()) == 1
    info = final.context_info
    assert info["summary_omitted"] is True and info["main_summary"] is True
    material = "\n".join(str(r.messages[-1]["content"]) for r in summaries)
    assert "Side question #45:" in material  # the newest exchange that left the window
    assert "Side question #1:" not in material  # the oldest were left out, not summarised


# the 120 s budget of a whole request ---------------------------------------------------


def test_side_request_budget_defaults_to_120_s(database_url: str, server: SideServer,
                                               db: Database) -> None:
    assert Settings.model_fields["side_timeout_s"].default == 120.0
    service = SideQuestionService(settings=side_settings(database_url, server), db=db,
                                  gateway=LiteLLMGateway(), snapshots=SnapshotStore(db))
    assert service.runner.timeout_s == 120.0


async def test_whole_request_ends_at_its_budget_though_no_call_times_out(
    side_factory, db: Database, server: SideServer  # type: ignore[no-untyped-def]
) -> None:
    """A token every 0.1 s for 20 s: no per-call (read) timeout ever fires, only the
    budget of the whole request, lowered here to 2 s through the setting."""
    budget_s = 2.0
    # litellm imports on the first call in a process: that must not eat the 2 s.
    warm = side_factory()
    seed_parent(db, warm.settings, "warm-up")
    server.reply_text("ok")
    warmed = await warm.submit(parent_id="warm-up", question="?", client_request_id="w")
    assert (await _finished_within(warm, warmed.request.id, 60)).status == "completed"
    service = side_factory(side_timeout_s=budget_s)
    seed_parent(db, service.settings)
    server.reply_text("word " * 200, deltas=200, delay_s=0.1)
    started = time.monotonic()
    result = await service.submit(parent_id="conv-1", question="Q", client_request_id="b")
    final = await _finished_within(service, result.request.id, budget_s + 8)
    elapsed = time.monotonic() - started
    assert final.status == "failed" and final.error == "The side question timed out after 2 s."
    assert final.answer.startswith("word ") and len(final.answer) < len("word " * 200)
    assert budget_s - 0.2 <= elapsed <= budget_s + 6, elapsed


# the snapshot is saved again before a side submission ---------------------------------


async def test_submission_saves_the_pending_snapshot_first(
    db: Database, database_url: str, server: SideServer, gateway: LiteLLMGateway
) -> None:
    """A store that would wait a minute before writing: the newest snapshot is only in
    memory when the question arrives, and the answer must come from it."""
    store = SnapshotStore(db, interval_s=60.0)
    settings = side_settings(database_url, server, side_replica_name="replica-snap")
    service = SideQuestionService(settings=settings, db=db, gateway=gateway, snapshots=store)
    seed_parent(db, settings)  # version 1, stored

    def snapshot(version: int) -> Any:
        return make_snapshot(
            conversation_id="conv-1", run_id="run-1", version=version, boundary="reply",
            system_prompt=SYSTEM_PROMPT,
            messages=[{"role": "user", "content": f"MAIN-CONTEXT-V{version}"}], tools=[],
            params={}, model=settings.agent_model, api_base=settings.agent_api_base,
            run_started_at=1.0)

    try:
        store(snapshot(2))  # the first offer is written at once (nothing written lately)
        deadline = time.monotonic() + 10
        while store.pending("conv-1") is not None or store.load("conv-1").version != 2:
            assert time.monotonic() < deadline, "snapshot 2 was never written"
            await asyncio.sleep(0.02)
        store(snapshot(3))  # now held back by the 60 s interval
        assert store.pending("conv-1") is not None and store.load("conv-1").version == 2
        server.reply_text("from version 3")
        result = await service.submit(parent_id="conv-1", question="Q?",
                                      client_request_id="s")
        with db.session() as session:
            row = repo.get_request(session=session, request_id=result.request.id)
            assert row is not None and (row.snapshot_run_id, row.snapshot_version) == (
                "run-1", 3)
        assert store.pending("conv-1") is None and store.load("conv-1").version == 3
        final = await _finished_within(service, result.request.id, 30)
        assert final.status == "completed"
        sent = str(server.side_requests()[-1].messages)
        assert "MAIN-CONTEXT-V3" in sent and "MAIN-CONTEXT-V2" not in sent
    finally:
        await service.aclose()


# history pages of 20: next_cursor --------------------------------------------------------


def _seed_completed(db: Database, parent: str, first: int, last: int) -> None:
    with db.session() as session:
        for number in range(first, last + 1):
            row = repo.create_request(
                session=session, parent_id=parent, generation=0,
                client_request_id=f"seed-{number}", question=f"question {number}",
                model="m", snapshot_run_id=None, snapshot_version=None, snapshot_at=None)
            assert row is not None
            session.flush()
            repo.update_request(session=session, request_id=row.id, generation=0,
                                status="completed", answer=f"answer {number}")


async def test_exactly_20_items_is_one_page_and_21_need_a_cursor(
    side: SideQuestionService, db: Database
) -> None:
    assert PAGE_SIZE == 20
    _seed_completed(db, "conv-1", 1, 20)
    page = await side.history(parent_id="conv-1")
    assert [item.ordinal for item in page.items] == list(range(20, 0, -1))
    assert page.next_cursor == 0  # 0 = no more

    _seed_completed(db, "conv-1", 21, 21)
    first = await side.history(parent_id="conv-1")
    assert [item.ordinal for item in first.items] == list(range(21, 1, -1))
    assert first.next_cursor == 2  # the last ordinal shown: pass it as `before`
    second = await side.history(parent_id="conv-1", before=first.next_cursor)
    assert [item.ordinal for item in second.items] == [1] and second.next_cursor == 0
