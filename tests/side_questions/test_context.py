"""Context budget: replay window, rolling summary cached in the database, overflow retry."""

from __future__ import annotations

import pytest

from side_questions.budget import make_budget
from storage import side_repository as repo
from tests.side_questions.conftest import ErrorAfterReply, finished, main_messages, seed_parent


def test_budget_arithmetic() -> None:
    unknown = make_budget(context_window=None, main_output_cap=4096)
    assert unknown.context_window == 200_000 and unknown.margin == 8192
    assert unknown.input_tokens == 200_000 - 4096 - 8192
    small = make_budget(context_window=2000, main_output_cap=16_000)
    assert small.output_cap == 8192 and small.margin == 128 and small.input_tokens == 0
    assert make_budget(context_window=16_384, main_output_cap=4096).margin == 819
    assert unknown.replay_tokens == 16_000 and small.shrunk().input_tokens == 0


def _seed_exchanges(db, parent: str, count: int) -> None:  # type: ignore[no-untyped-def]
    with db.session() as session:
        for index in range(1, count + 1):
            row = repo.create_request(session=session, parent_id=parent, generation=0,
                                      client_request_id=f"old{index}", question=f"Q{index}?",
                                      model="m", snapshot_run_id=None, snapshot_version=None,
                                      snapshot_at=None)
            session.flush()
            repo.update_request(session=session, request_id=row.id, generation=0,
                                status="completed", answer=f"A{index}.")


@pytest.mark.parametrize("earlier", [19, 20, 21, 50])
async def test_replay_window_and_cached_summary(side_factory, db, server, earlier) -> None:  # type: ignore[no-untyped-def]
    service = side_factory()
    seed_parent(db, service.settings)
    _seed_exchanges(db, "conv-1", earlier)
    if earlier > 20:
        server.reply_text(f"SUMMARY-OF-{earlier - 20}")
    server.reply_text("now")
    result = await service.submit(parent_id="conv-1", question="new?", client_request_id="n")
    final = await finished(service, result.request.id)
    assert final.status == "completed"
    info = final.context_info
    assert info["replayed"] == min(earlier, 20)
    assert info["estimate_tokens"] <= info["input_budget"]
    sent = server.side_requests()[-1].messages
    replayed = [m["content"] for m in sent if m["role"] == "user" and m["content"].startswith("Q")]
    assert replayed == [f"Q{i}?" for i in range(max(1, earlier - 19), earlier + 1)]
    summaries = server.summary_requests()
    assert len(summaries) == (1 if earlier > 20 else 0)
    if earlier > 20:
        material = summaries[0].messages[-1]["content"]
        assert f"Q{earlier - 20}?" in material and f"Q{earlier - 19}?" not in material
        assert f"SUMMARY-OF-{earlier - 20}" in sent[0]["content"]
    # Restart: a new service reads the stored summary and only folds in what is new.
    await service.aclose()
    restarted = side_factory()
    server.requests.clear()
    if earlier + 1 > 20:
        server.reply_text("SUMMARY-NEXT")
    server.reply_text("again")
    second = await restarted.submit(parent_id="conv-1", question="more?",
                                    client_request_id="m")
    assert (await finished(restarted, second.request.id)).status == "completed"
    summaries = server.summary_requests()
    if earlier + 1 > 20:
        assert len(summaries) == 1
        material = summaries[0].messages[-1]["content"]
        assert f"Q{earlier - 19}?" in material  # the one exchange that left the window
        assert "Q1?" not in material or earlier - 19 == 1
        if earlier > 20:
            assert f"SUMMARY-OF-{earlier - 20}" in material  # the cached summary
    else:
        assert summaries == []


async def test_overflow_before_output_retries_once_smaller(side_factory, db, server) -> None:  # type: ignore[no-untyped-def]
    service = side_factory(agent_context_window=16_384)
    seed_parent(db, service.settings, messages=main_messages(turns=6, size=1400))
    server.reply_context_overflow()
    server.reply_text("SHORT-SUMMARY")
    server.reply_text("fine")
    result = await service.submit(parent_id="conv-1", question="Q", client_request_id="o")
    final = await finished(service, result.request.id)
    assert final.status == "completed" and final.answer == "fine"
    assert len(server.side_requests()) == 2 and len(server.summary_requests()) == 1
    info = final.context_info
    assert info["retried_after_overflow"] and info["main_summary"]
    assert info["estimate_tokens"] < info["first_estimate_tokens"]
    assert final.usage["calls"] == 3
    retry = server.side_requests()[1].messages
    assert "SHORT-SUMMARY" in retry[1]["content"]
    roles = [m["role"] for m in retry]
    for index, message in enumerate(retry):  # every kept tool result follows its call
        if message["role"] == "tool":
            assert roles[index - 1] in ("assistant", "tool")


async def test_no_retry_after_partial_output(side, server) -> None:  # type: ignore[no-untyped-def]
    server.push(ErrorAfterReply(text="partial answer", text_deltas=2, error_after=2))
    result = await side.submit(parent_id="conv-1", question="Q", client_request_id="p")
    final = await finished(side, result.request.id)
    assert final.status == "failed" and final.answer == "partial"
    assert "context" in final.error.lower()
    assert len(server.requests) == 1


async def test_no_retry_when_estimate_does_not_shrink(side, server) -> None:  # type: ignore[no-untyped-def]
    server.reply_context_overflow()
    result = await side.submit(parent_id="conv-1", question="Q", client_request_id="s")
    final = await finished(side, result.request.id)
    assert final.status == "failed" and final.answer == ""
    assert len(server.requests) == 1 and final.usage["calls"] == 1
    assert final.usage["total_tokens"] == 0
