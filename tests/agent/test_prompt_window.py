"""A step reads a bounded window of the conversation (issue 16, item 4): the current run's
own messages and at most AGENT_HISTORY_MESSAGES earlier ones, cut at a turn's start, so a
turn in a 10 000-message conversation reads hundreds of rows, not 10 000 per step."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import event, insert

from runtime import Runtime
from storage import conversations as repo
from storage.models import Message, utcnow
from tests.agent.guardrails_support import call, turn
from tests.fakes.openai_server import ScriptedOpenAIServer

EARLIER = 10_000


def _long_conversation(rt: Runtime, conv_id: str, owner: str, count: int) -> None:
    """`count` stored messages: user / assistant pairs, numbered."""
    with rt.db.session() as session:
        repo.create_conversation(session=session, owner_id=owner, conversation_id=conv_id)
    now = utcnow()
    rows = [{"conversation_id": conv_id, "seq": seq, "role": "user" if seq % 2 else "assistant",
             "content": f"message {seq}", "created_at": now} for seq in range(1, count + 1)]
    with rt.db.session() as session:
        session.execute(insert(Message), rows)


@pytest.fixture
def loaded_rows() -> Iterator[list[int]]:
    """How many message rows the ORM loaded (SQLAlchemy's load event, per instance)."""
    seen = [0]

    def count(*_: object) -> None:
        seen[0] += 1

    event.listen(Message, "load", count)
    yield seen
    event.remove(Message, "load", count)


async def test_a_turn_in_a_ten_thousand_message_conversation_reads_a_bounded_window(
        rt: Runtime, server: ScriptedOpenAIServer, loaded_rows: list[int]) -> None:
    _long_conversation(rt, "conv-long", "demo-admin", EARLIER)
    server.reply_tool_calls(call("list_dashboards"), text="Looking.")
    server.reply_text("Here they are.")
    events = await turn(rt, "list the dashboards", conv_id="conv-long")

    assert events[-1]["status"] == "completed", events[-1]
    window = rt.settings.agent_history_messages
    steps = len(server.requests)  # each step reads once, and the run's end once more
    assert loaded_rows[0] <= (steps + 1) * (window + 8)  # was 10 000 a read
    sent = [m for m in server.requests[-1].messages if m["role"] != "system"]
    assert sent[0] == {"role": "user", "content": f"message {EARLIER - window + 1}"}
    assert sent[window - 1]["content"] == f"message {EARLIER}"  # the newest turn, verbatim
    assert [m["role"] for m in sent[window:]] == ["user", "assistant", "tool"]


def test_the_window_starts_at_a_user_message_and_keeps_the_whole_current_run(
        rt: Runtime) -> None:
    _long_conversation(rt, "conv-cut", "demo-admin", 21)  # ends with a user message (21)
    with rt.db.session() as session:
        for number in range(30):  # a long current run: more rows than the window
            repo.append_message(session=session, conversation_id="conv-cut", run_id="r-now",
                                role="assistant", content=f"step {number}")
        rows = repo.list_prompt_window(session=session, conversation_id="conv-cut",
                                       run_id="r-now", earlier=10)
    earlier = [row for row in rows if row.run_id != "r-now"]
    assert [row.seq for row in earlier] == list(range(13, 22))  # 12 is an answer: cut
    assert earlier[0].role == "user"
    assert [row.content for row in rows if row.run_id == "r-now"] == [
        f"step {number}" for number in range(30)]


def test_a_short_conversation_is_read_whole(rt: Runtime) -> None:
    _long_conversation(rt, "conv-short", "demo-admin", 6)
    with rt.db.session() as session:
        rows = repo.list_prompt_window(session=session, conversation_id="conv-short",
                                       run_id="r-new", earlier=10)
    assert [row.seq for row in rows] == [1, 2, 3, 4, 5, 6]
