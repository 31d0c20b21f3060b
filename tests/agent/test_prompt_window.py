"""A step reads a bounded window of the conversation (issue 16, item 4; issue 13): the
current run's own messages and at most 2 × AGENT_HISTORY_MESSAGES earlier ones after the
rolling summary, so a turn in a 10 000-message conversation reads hundreds of rows, not
10 000 per step; what leaves the window is folded into the summary at turn boundaries,
never between a tool call and its results (`fold_point`), and the window of a model comes
from litellm's model info unless AGENT_CONTEXT_WINDOW says otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from sqlalchemy import event, insert, update
from sqlmodel import col

from agent.model_gateway import LiteLLMGateway
from agent.prompt_window import PromptWindow, fold_point
from agent.settings import Settings
from runtime import Runtime
from storage import conversations as repo
from storage.models import Conversation, Message, utcnow
from tests.agent.budget_support import WINDOW, SmallWindowModel
from tests.agent.guardrails_support import call, scripted_runtime, turn
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
        session.execute(update(Conversation).where(col(Conversation.id) == conv_id)
                        .values(last_seq=count))  # the counter appends go on from


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
    server.reply_text("SUMMARY-OF-OLDER")  # the first step folds what exceeds the window
    server.reply_tool_calls(call("list_dashboards"), text="Looking.")
    server.reply_text("Here they are.")
    events = await turn(rt, "list the dashboards", conv_id="conv-long")

    assert events[-1]["status"] == "completed", events[-1]
    window = rt.settings.agent_history_messages
    reads = 3  # each of the two steps reads once, and the run's end once more
    assert loaded_rows[0] <= reads * (2 * window + 8)  # was 10 000 a read
    summary, *steps = server.requests
    assert "<conversation_summary/>" in summary.messages[0]["content"]
    material = summary.messages[-1]["content"]
    # read: the newest 2 x window earlier messages; folded: all but the newest window / 2
    assert f"user: message {EARLIER - 2 * window + 1}\n" in material
    assert f"message {EARLIER - window // 2}\n" in material
    assert f"message {EARLIER - window // 2 + 1}\n" not in material
    system, *sent = steps[-1].messages
    assert "SUMMARY-OF-OLDER" in system["content"]
    assert "older material was left out" in system["content"]  # 9 600 never read: said so
    assert sent[0] == {"role": "user", "content": f"message {EARLIER - window // 2 + 1}"}
    assert sent[window // 2 - 1]["content"] == f"message {EARLIER}"  # the newest, verbatim
    assert [m["role"] for m in sent[window // 2:]] == ["user", "assistant", "tool"]


def test_the_window_starts_at_a_user_message_and_keeps_the_whole_current_run(
        rt: Runtime) -> None:
    _long_conversation(rt, "conv-cut", "demo-admin", 21)  # ends with a user message (21)
    with rt.db.session() as session:
        for number in range(30):  # a long current run: more rows than the window
            repo.append_message(session=session, conversation_id="conv-cut", run_id="r-now",
                                role="assistant", content=f"step {number}")
        window, own = repo.list_prompt_window(session=session, conversation_id="conv-cut",
                                              run_id="r-now", earlier=10)
    rows = [*window, *own]
    earlier = [row for row in rows if row.run_id != "r-now"]
    assert [row.seq for row in earlier] == list(range(13, 22))  # 12 is an answer: cut
    assert earlier[0].role == "user"
    assert [row.content for row in rows if row.run_id == "r-now"] == [
        f"step {number}" for number in range(30)]


def test_a_short_conversation_is_read_whole(rt: Runtime) -> None:
    _long_conversation(rt, "conv-short", "demo-admin", 6)
    with rt.db.session() as session:
        window, own = repo.list_prompt_window(session=session, conversation_id="conv-short",
                                              run_id="r-new", earlier=10)
    rows = [*window, *own]
    assert [row.seq for row in rows] == [1, 2, 3, 4, 5, 6]


def test_the_window_read_starts_after_the_summary(rt: Runtime) -> None:
    _long_conversation(rt, "conv-after", "demo-admin", 30)
    with rt.db.session() as session:
        repo.append_message(session=session, conversation_id="conv-after", run_id="r-now",
                            role="user", content="now")
        window, own = repo.list_prompt_window(session=session, conversation_id="conv-after",
                                              run_id="r-now", earlier=100, after_seq=20)
    rows = [*window, *own]
    assert [row.seq for row in rows] == list(range(21, 32))


def _window(rt: Runtime, conv_id: str, run_id: str) -> PromptWindow:
    return PromptWindow(db=rt.db, settings=rt.settings, gateway=rt.gateway,
                        conversation_id=conv_id, run_id=run_id, system_prompt="sp",
                        tools=[], record=lambda _reply: None)


async def test_a_runs_later_steps_read_only_its_own_messages(rt: Runtime) -> None:
    """What precedes a run cannot change while it runs (its lease keeps other writers out),
    so only a run's first step reads the summary, the earlier window and the latest
    request; later steps read the run's own messages, in one statement, and build the
    prompt a fresh read builds."""
    _long_conversation(rt, "conv-steps", "demo-admin", 30)
    with rt.db.session() as session:
        repo.append_message(session=session, conversation_id="conv-steps", run_id="r-now",
                            role="user", content="list the dashboards")
    window = _window(rt, "conv-steps", "r-now")
    first = await window.build()
    with rt.db.session() as session:  # the step's call and its result
        repo.append_messages(session=session, conversation_id="conv-steps", messages=[
            {"run_id": "r-now", "role": "assistant", "content": "",
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "list_dashboards", "arguments": "{}"}}]},
            {"run_id": "r-now", "role": "tool", "content": "[]", "tool_call_id": "c1",
             "tool_name": "list_dashboards"}])
    statements: list[str] = []

    def executed(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(rt.db.engine, "before_cursor_execute", executed)
    try:
        later = await window.build()
    finally:
        event.remove(rt.db.engine, "before_cursor_execute", executed)
    fresh = await _window(rt, "conv-steps", "r-now").build()
    selects = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1, statements  # was 5: summary, run start, window, run, latest
    assert later.messages == fresh.messages and later.system == fresh.system
    assert later.messages[:len(first.messages)] == first.messages
    assert [m["role"] for m in later.messages[len(first.messages):]] == ["assistant", "tool"]


# where a fold ends ------------------------------------------------------------------------


def test_a_fold_that_would_end_on_a_tool_result_ends_at_the_next_turn() -> None:
    roles = ["user", "assistant", "tool", "tool", "assistant", "user", "assistant", "user"]
    cut = fold_point(roles, [10] * 8, 7, room=120, max_earlier=100)
    assert cut == 5 and roles[cut] == "user"  # the token target alone would end at 2


def test_a_run_too_long_for_the_window_is_folded_between_steps() -> None:
    roles = ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    costs = [5, 5, 5, 100, 5, 100, 5]
    assert fold_point(roles, costs, 0, room=150, max_earlier=100) == 5  # not at 4: a result
    # only a call's results would be left: the call stays with them
    assert fold_point(["user", "assistant", "tool"], [5, 5, 500], 0, room=100,
                      max_earlier=100) == 1


def test_more_earlier_messages_than_the_cap_fold_down_to_half_of_it() -> None:
    roles = ["user", "assistant"] * 10 + ["user"]
    cut = fold_point(roles, [1] * 21, 20, room=1000, max_earlier=10)
    assert cut == 16 and 20 - cut <= 5


async def test_a_folded_request_is_still_sent_verbatim(
        settings: Settings, server: ScriptedOpenAIServer) -> None:
    """A run whose own tool results exceed a 4K window: its first steps are folded, its
    request stays, as the first message after the system prompt and its summary."""
    rt = scripted_runtime(settings, server, agent_context_window=WINDOW,
                          agent_max_output_tokens=512)
    server.respond_with(SmallWindowModel())
    try:
        with rt.db.session() as session:
            repo.create_conversation(session=session, owner_id="u", conversation_id="c-run")
            append = partial(repo.append_message, session=session, conversation_id="c-run",
                             run_id="r-now")
            append(role="user", content="turn 1: read all six")
            for step in range(6):
                append(role="assistant", tool_calls=[{"id": f"c{step}", "type": "function",
                       "function": {"name": "get_dashboard", "arguments": "{}"}}])
                append(role="tool", tool_call_id=f"c{step}", tool_name="get_dashboard",
                       content=f"R{step} " + "r" * 2400)
        used: list[Any] = []
        window = PromptWindow(db=rt.db, settings=rt.settings, gateway=rt.gateway,
                              conversation_id="c-run", run_id="r-now", system_prompt="sys",
                              tools=[], record=used.append)
        budget = await window.budget()
        prompt = await window.build()
        assert prompt.estimate <= budget.input_tokens and len(used) == 1
        assert prompt.system.startswith("sys\n\nSummary of the earlier part")
        assert '<data source="summary">' in prompt.system
        request, *rest = prompt.messages
        assert request == {"role": "user", "content": "turn 1: read all six"}
        assert rest[0]["role"] == "assistant" and rest[-1]["content"].startswith(
            '<data source="tool:get_dashboard">\nR5 ')
        again = await window.build()  # the next step starts from the stored summary
        assert again.messages == prompt.messages and len(used) == 1
    finally:
        server.respond_with(None)
        await rt.aclose()


# the model's window ---------------------------------------------------------------------


async def test_the_window_is_litellms_unless_the_setting_says_otherwise(
        settings: Settings, server: ScriptedOpenAIServer) -> None:
    gateway = LiteLLMGateway()
    assert await gateway.context_window("openai/gpt-4o-mini") == 128_000
    assert await gateway.context_window("offline-agent/superset-demo") is None
    litellm = gateway.load()
    litellm.register_model({"openai/budget-test-4k": {
        "max_input_tokens": 4096, "max_output_tokens": 1024, "litellm_provider": "openai",
        "mode": "chat", "input_cost_per_token": 0.0, "output_cost_per_token": 0.0}})
    for configured, max_tokens in ((None, 1024), (16_384, 4096)):
        rt = scripted_runtime(settings, server, agent_model="openai/budget-test-4k",
                              agent_context_window=configured)
        try:
            server.reply_text("ok")
            events = await turn(rt, "hello", conv_id=f"conv-{max_tokens}")
            assert events[-1]["status"] == "completed"
            # the output cap is a quarter of a 4K window at most, AGENT_MAX_OUTPUT_TOKENS
            # (4096) otherwise: the budget saw litellm's window, then the setting
            assert server.requests[-1].body["max_tokens"] == max_tokens
        finally:
            await rt.aclose()
