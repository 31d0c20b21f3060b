"""Stored rows to model messages: every tool call keeps its result, orphans are dropped."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from agent.data_blocks import unwrap_data, wrap_tool_result
from agent.history import paired_only, to_model_messages
from storage import conversations as repo
from storage.db import Database


@dataclass
class Row:
    role: str
    content: str = ""
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None


def _call(call_id: str, name: str = "get_dashboard") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_rows_become_openai_messages() -> None:
    rows = [Row("user", "hi"), Row("assistant", "", [_call("a")]),
            Row("tool", "result", tool_call_id="a", tool_name="get_dashboard"),
            Row("assistant", "done")]

    assert to_model_messages(rows) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
        {"role": "tool", "tool_call_id": "a", "name": "get_dashboard",
         "content": wrap_tool_result("get_dashboard", "result")},
        {"role": "assistant", "content": "done"},
    ]


def test_an_unanswered_call_is_dropped_with_its_empty_message() -> None:
    rows = [Row("user", "hi"), Row("assistant", "", [_call("lost")]), Row("user", "again")]

    assert to_model_messages(rows) == [{"role": "user", "content": "hi"},
                                       {"role": "user", "content": "again"}]


def test_an_unanswered_call_keeps_the_assistant_text() -> None:
    rows = [Row("assistant", "Let me look.", [_call("lost")])]

    assert to_model_messages(rows) == [{"role": "assistant", "content": "Let me look."}]


def test_only_answered_calls_of_a_message_are_kept() -> None:
    rows = [Row("assistant", "", [_call("a"), _call("b")]),
            Row("tool", "ra", tool_call_id="b", tool_name="get_dashboard")]

    messages = to_model_messages(rows)

    assert _is_valid_openai_transcript(messages)
    assert [c["id"] for c in messages[0]["tool_calls"]] == ["b"]
    assert [m["role"] for m in messages] == ["assistant", "tool"]


def _is_valid_openai_transcript(messages: list[dict[str, Any]]) -> bool:
    """Every call answered in the tool block right after it; every result follows its call."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message["role"] == "tool":
            return False
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [call["id"] for call in message["tool_calls"]]
            answered = []
            while index < len(messages) and messages[index]["role"] == "tool":
                answered.append(messages[index]["tool_call_id"])
                index += 1
            if sorted(answered) != sorted(ids):
                return False
    return True


def test_orphan_and_premature_results_are_dropped() -> None:
    rows = [Row("tool", "early", tool_call_id="a", tool_name="x"),
            Row("assistant", "", [_call("a")]),
            Row("tool", "stray", tool_call_id="zzz", tool_name="x")]

    messages = to_model_messages(rows)

    assert messages == []


def test_a_result_separated_from_its_call_does_not_pair() -> None:
    """Providers require the results right after the call; a user message in between
    (e.g. a reply stored while a call waited) makes the pair invalid, so both go."""
    rows = [Row("user", "hi"), Row("assistant", "Checking.", [_call("a")]),
            Row("user", "anything?"), Row("tool", "late", tool_call_id="a", tool_name="x")]

    messages = to_model_messages(rows)

    assert messages == [{"role": "user", "content": "hi"},
                        {"role": "assistant", "content": "Checking."},
                        {"role": "user", "content": "anything?"}]


def test_a_reused_call_id_does_not_pair_with_an_older_result() -> None:
    rows = [Row("assistant", "", [_call("call_0")]),
            Row("tool", "first", tool_call_id="call_0", tool_name="x"),
            Row("assistant", "", [_call("call_0")]),
            Row("user", "next")]

    messages = to_model_messages(rows)

    assert _is_valid_openai_transcript(messages)
    assert [m["role"] for m in messages] == ["assistant", "tool", "user"]


def test_duplicate_results_keep_the_first() -> None:
    rows = [Row("assistant", "", [_call("a")]),
            Row("tool", "one", tool_call_id="a", tool_name="x"),
            Row("tool", "two", tool_call_id="a", tool_name="x")]

    messages = to_model_messages(rows)

    assert [unwrap_data(m.get("content") or "") for m in messages] == ["", "one"]


def test_paired_only_does_not_mutate_its_input() -> None:
    messages = [{"role": "assistant", "content": "x", "tool_calls": [_call("a"), _call("b")]},
                {"role": "tool", "tool_call_id": "a", "content": "r"}]
    before = copy.deepcopy(messages)

    paired_only(messages)

    assert messages == before


def test_stored_rows_round_trip_through_the_database(db: Database) -> None:
    with db.session() as session:
        repo.create_conversation(session=session, owner_id="u", conversation_id="c")
        repo.append_message(session=session, conversation_id="c", role="user", content="hi")
        repo.append_message(session=session, conversation_id="c", role="assistant",
                            tool_calls=[_call("a", "list_dashboards")])
        repo.append_message(session=session, conversation_id="c", role="tool", content="[]",
                            tool_call_id="a", tool_name="list_dashboards",
                            meta={"status": "done"})
    with db.session() as session:
        messages = to_model_messages(repo.list_messages(session=session, conversation_id="c"))

    assert messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a", "list_dashboards")]},
        {"role": "tool", "tool_call_id": "a", "name": "list_dashboards",
         "content": wrap_tool_result("list_dashboards", "[]")},
    ]


def test_an_empty_assistant_reply_is_left_out() -> None:
    rows = [Row("user", "hi"), Row("assistant", ""), Row("user", "again")]

    assert to_model_messages(rows) == [{"role": "user", "content": "hi"},
                                       {"role": "user", "content": "again"}]
