"""Stopping a run from a client: `job.cancel()` ends it with done(cancelled), keeps what ran."""

from __future__ import annotations

import time

import pytest
from sqlmodel import select

from storage.models import Message, Run
from tests.fakes.gradio_api import api_client
from tests.web.conftest import LiveServer

# Slow the offline model down so there is a stream to interrupt.
SERVER_SETTINGS = {"offline_token_delay_ms": 80}


def _wait(predicate, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_job_cancel_ends_the_run_as_cancelled(live_server: LiveServer) -> None:
    client = api_client(live_server.agent_url)
    user_id, token = live_server.token("viewer")
    job = client.submit("what can you do?", None, "", user_id, token, "ss-dev",
                        api_name="/agent_handler")

    def streaming_answer() -> bool:
        outputs = job.outputs()
        return bool(outputs) and any(e["type"] == "token" for e in outputs[-1][1])

    _wait(streaming_answer)
    conv_id = job.outputs()[-1][1][0]["conv_id"]
    job.cancel()
    live = live_server.runtime.agent.live_run(conv_id)
    assert live is not None
    _wait(live.finished.is_set)
    assert live.events[-1]["type"] == "done" and live.events[-1]["status"] == "cancelled"

    with live_server.runtime.db.session() as session:
        run = session.exec(select(Run).where(Run.conversation_id == conv_id)).one()
        rows = session.exec(select(Message).where(Message.conversation_id == conv_id)
                            .order_by(Message.seq)).all()
    assert run.status == "cancelled"
    # The user turn, the tool call and its result completed and are kept; the answer that
    # was being streamed is kept as far as it streamed, marked stopped (what the page
    # showed, so a reload shows the same).
    assert [row.role for row in rows] == ["user", "assistant", "tool", "assistant"]
    assert (rows[-1].meta or {}).get("status") == "stopped" and rows[-1].content
    streamed = "".join(e["text"] for e in live.events if e["type"] == "token")
    assert streamed.startswith(rows[-1].content)
    assert rows[1].tool_calls and rows[2].tool_call_id == rows[1].tool_calls[0]["id"]


@pytest.mark.parametrize("role", ["viewer"])
def test_a_new_turn_after_cancel_works(live_server: LiveServer, role: str) -> None:
    client = api_client(live_server.agent_url)
    user_id, token = live_server.token(role)
    job = client.submit("what can you do?", None, "", user_id, token, "ss-dev",
                        api_name="/agent_handler")
    _wait(lambda: bool(job.outputs()))
    conv_id = job.outputs()[-1][1][0]["conv_id"]
    job.cancel()
    live = live_server.runtime.agent.live_run(conv_id)
    _wait(lambda: live is not None and live.finished.is_set())
    _, events = client.predict("", None, conv_id, user_id, token, "ss-dev",
                               api_name="/agent_handler")
    assert events[-1]["status"] == "completed"


async def test_the_stop_button_on_an_unknown_or_foreign_conversation_answers_the_same(
    runtime,  # type: ignore[no-untyped-def]
) -> None:
    from tests.agent.guardrails_support import turn
    from web.handlers import Handlers
    from web.signin import SignInHandlers

    await turn(runtime, "what can you do?", role="editor", conv_id="editors")
    handlers = Handlers(runtime, SignInHandlers(runtime))
    viewer, token = runtime.issuer.mint_demo("viewer")
    answers = [await handlers.stop(conv, viewer.user_id, token)
               for conv in ("editors", "never-made")]
    assert answers == [([], []), ([], [])]
