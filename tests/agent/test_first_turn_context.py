"""A conversation's first prompt is built from what its admission wrote, not read back.

The admission of a conversation's first turn writes its first message (number 1, from the
conversation's counter, in the claim's transaction, under the lease): nothing else is
stored, and reading that back took three queries, 2.5 ms of a 52 ms first turn (traced
2026-12-07). The context built instead must be the one the read gives; a conversation that
holds messages already is still read.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent import admission as admission_module
from agent.prompt_window import StoredContext
from agent.settings import Settings
from tests.agent.guardrails_support import scripted_runtime, stored, turn, user
from tests.fakes.openai_server import ScriptedOpenAIServer


def _rows(rows: list[Any]) -> list[tuple[Any, ...]]:
    return [(r.conversation_id, r.seq, r.run_id, r.role, r.content, r.tool_calls,
             r.tool_call_id, r.tool_name, r.meta) for r in rows]


def _shape(context: StoredContext) -> tuple[Any, ...]:
    view, known = context.view, context.known
    assert known is not None
    latest = view.latest_user
    return (view.summary, view.through_seq, _rows(view.rows), view.run_start, view.gap,
            None if latest is None else _rows([latest]), known.first_of_run,
            known.view.summary, known.view.through_seq, _rows(known.view.rows))


def test_a_new_conversation_is_not_read_back_and_its_context_is_what_a_read_gives(
        settings: Settings, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    rt = scripted_runtime(settings, server)
    reads: list[str] = []
    real_read = admission_module.read_context
    monkeypatch.setattr(admission_module, "read_context",
                        lambda db, s, conv, run: reads.append(conv) or real_read(db, s, conv, run))
    try:
        identity, token = user(rt, "admin")
        admission = rt.agent.admission
        request = admission.turn(identity, "list the dashboards", "conv-new", "ss-dev", None,
                                 token)
        assert reads == []  # built, not read (before: one read)
        assert request.first_read is not None
        assert _shape(request.first_read) == _shape(
            real_read(rt.db, rt.settings, "conv-new", request.run_id))
        admission.leases.release(request.run_id)

        again = admission.turn(identity, "and the datasets?", "conv-new", "ss-dev", None,
                               token)  # it holds a turn now: read as before
        assert reads == ["conv-new"]
        assert _shape(again.first_read) == _shape(
            real_read(rt.db, rt.settings, "conv-new", again.run_id))
        admission.leases.release(again.run_id)

        # made empty first (a new chat opened before its first message): nothing stored yet
        admission.open_conversation(identity, "conv-empty")
        empty = admission.turn(identity, "hello", "conv-empty", "ss-dev", None, token)
        assert reads == ["conv-new"]
        assert _shape(empty.first_read) == _shape(
            real_read(rt.db, rt.settings, "conv-empty", empty.run_id))
        admission.leases.release(empty.run_id)
    finally:
        rt.close()


async def test_a_first_turn_runs_on_the_built_context_as_it_did_on_the_read(
        settings: Settings, server: ScriptedOpenAIServer) -> None:
    """The model gets the person's message once, after the system prompt, and the turn is
    stored whole."""
    rt = scripted_runtime(settings, server)
    try:
        server.reply_text("Hello.")
        events = await turn(rt, "hi there", conv_id="conv-first")
        assert events[-1]["status"] == "completed"
        sent = server.requests[-1].messages
        assert [m["role"] for m in sent] == ["system", "user"]
        assert sent[-1]["content"] == "hi there"
        assert [(m.role, m.content) for m in stored(rt, "conv-first")] == [
            ("user", "hi there"), ("assistant", "Hello.")]
    finally:
        rt.close()
