"""The main run's context budget (issue 13, item 1) against a scripted 4K-token model.

A long conversation keeps working: every request fits the budget (by the app's estimate
and by raw size), older turns are folded into a rolling summary that is stored, reused
after a restart and extended (never redone), tool calls stay with their results, the
summary calls are counted in the run's usage, and an overflow before any output gets
exactly one smaller retry.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent.data_blocks import DATA_RULE
from agent.settings import Settings
from runtime import Runtime, build_runtime
from storage import prompt_summaries
from tests.agent.budget_support import (
    OUTPUT,
    SUMMARY_USAGE,
    TOOL_EVERY,
    WINDOW,
    SmallWindowModel,
    is_summary,
    raw_chars,
)
from tests.agent.guardrails_support import scripted_runtime, stored, turn
from tests.fakes.openai_server import RecordedRequest, ScriptedOpenAIServer

CONV = "conv-long"
_CALLED = re.compile(r'\[called get_dashboard\(\{"dashboard_id": \d\}\)\]\ntool get_dashboard '
                     r"result: ")


@pytest.fixture
def model(server: ScriptedOpenAIServer) -> Iterator[SmallWindowModel]:
    rule = SmallWindowModel()
    server.respond_with(rule)
    yield rule
    server.respond_with(None)


def _runtime(settings: Settings, server: ScriptedOpenAIServer) -> Runtime:
    return scripted_runtime(settings, server, agent_context_window=WINDOW,
                            agent_max_output_tokens=OUTPUT, runs_burst_per_user=1000,
                            runs_per_minute_per_user=60_000.0)


async def _turns(rt: Runtime, numbers: range) -> list[list[dict[str, Any]]]:
    runs = []
    for number in numbers:
        events = await turn(rt, f"turn {number}: tell me about it", conv_id=CONV,
                            role="viewer", page="dashboard", object_id=1)
        assert events[-1]["type"] == "done" and events[-1]["status"] == "completed", (
            number, events[-1])
        runs.append(events)
    return runs


def _main(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if not is_summary(r.body)]


def _summary(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if is_summary(r.body)]


def _assert_pairs_whole(messages: list[dict[str, Any]]) -> None:
    """Every tool result follows its own call's assistant message (through the results
    before it), and every call sent has its result."""
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, message
            open_calls.discard(message["tool_call_id"])
            continue
        assert not open_calls, f"calls without results: {open_calls}"
        open_calls = {call["id"] for call in message.get("tool_calls") or []}
    assert not open_calls


def _stored_summary(rt: Runtime) -> prompt_summaries.ConversationSummary | None:
    with rt.db.session() as session:
        return prompt_summaries.get_summary(session=session, conversation_id=CONV)


async def test_two_hundred_turns_in_a_4k_window(
        settings: Settings, server: ScriptedOpenAIServer, model: SmallWindowModel) -> None:
    rt = _runtime(settings, server)
    started = time.monotonic()
    runs, summaries_in = [], []
    try:
        for number in range(1, 201):
            before = len(_summary(server.requests))
            runs += await _turns(rt, range(number, number + 1))
            summaries_in.append(len(_summary(server.requests)) - before)
    finally:
        await rt.aclose()
    print(f"200 turns: {time.monotonic() - started:.1f} s, {len(server.requests)} requests, "
          f"{len(_summary(server.requests))} summaries, largest estimate "
          f"{max(model.estimate(r.body) for r in server.requests)} of {model.budget.input_tokens}"
          f" tokens, largest body {max(raw_chars(r.body) for r in server.requests)} characters")
    budget = model.budget
    mains = _main(server.requests)
    assert len(mains) == 200 + 200 // TOOL_EVERY  # one answer per turn, one more per tool turn
    for request in server.requests:
        assert model.estimate(request.body) <= budget.input_tokens, request.messages
        assert raw_chars(request.body) <= model.raw_limit
        assert request.body["max_tokens"] <= budget.output_cap
    for request in mains:
        system, *messages = request.messages
        assert system["role"] == "system" and DATA_RULE in system["content"]
        _assert_pairs_whole(messages)
        assert messages[-1]["role"] in ("user", "tool")
    # the newest turn is there verbatim; the oldest only through the summary
    last = mains[-1].messages
    assert "turn 200: tell me about it" in str(last) and "turn 1:" not in str(last)
    summary_block = last[0]["content"].split("Summary of the earlier part", 1)[1]
    assert summary_block.startswith(" of this conversation (older turns, condensed):\n"
                                    '<data source="summary">\nSUMMARY-')
    assert all(m["role"] != "system" for m in last[1:])  # one system message, first

    summaries = _summary(server.requests)
    assert 1 <= len(summaries) <= 200 // 5  # folds leave room to spare: not every turn
    covered: list[set[int]] = []
    for request in summaries:
        material = request.messages[-1]["content"].split("New material:", 1)[1]
        # each call folded with its result, each result with its call
        assert material.count("[called ") == len(_CALLED.findall(material))
        assert "tool get_dashboard result" not in _CALLED.sub("", material)
        turns = {int(n) for n in re.findall(r"user: turn (\d+):", material)}
        for number in (n for n in turns if n % TOOL_EVERY == 0):  # neither was dropped
            assert re.search(rf"Reading it for turn {number}\. c+ {_CALLED.pattern}", material)
        covered.append(turns)
    seen: set[int] = set()
    for turns in covered:  # extended, never redone: each turn folded once
        assert not turns & seen
        seen |= turns
    assert seen and max(seen) < 200

    stored_summary = _stored_summary(rt)
    assert stored_summary is not None and stored_summary.text.startswith("SUMMARY-")
    assert all(stored_summary.text not in row.content for row in stored(rt, CONV))
    # a summary call's usage is its run's usage (the main replies report 10 prompt tokens)
    for events, calls in zip(runs, summaries_in, strict=True):
        prompt_tokens = events[-1]["usage"]["prompt_tokens"]
        assert SUMMARY_USAGE["prompt_tokens"] * calls <= prompt_tokens < (
            SUMMARY_USAGE["prompt_tokens"] * calls + 100)


def _turns_in(rt: Runtime, through_seq: int) -> set[int]:
    return {int(n) for row in stored(rt, CONV) if row.seq <= through_seq and row.role == "user"
            for n in re.findall(r"^turn (\d+):", row.content)}


async def test_the_summary_is_stored_reused_after_a_restart_and_extended(
        settings: Settings, server: ScriptedOpenAIServer, model: SmallWindowModel) -> None:
    first = _runtime(settings, server)
    try:
        await _turns(first, range(1, 16))
    finally:
        await first.aclose()
    before = _stored_summary(first)
    assert before is not None and before.text.startswith("SUMMARY-")
    folded = _turns_in(first, before.through_seq)
    assert folded and max(folded) < 15

    server.requests.clear()
    restarted = _runtime(settings, server)  # a new process on the same database
    try:
        await _turns(restarted, range(16, 17))
        opening = _main(server.requests)[0].messages
        assert before.text in opening[0]["content"]  # reused as stored, not rebuilt
        assert _summary(server.requests) == []
        await _turns(restarted, range(17, 31))
    finally:
        await restarted.aclose()
    summaries = _summary(server.requests)
    assert summaries, "fifteen more turns fold again"
    extended = summaries[0].messages[-1]["content"]
    prior, material = extended.split("New material:", 1)
    assert before.text in prior  # the stored summary is extended...
    again = {int(n) for n in re.findall(r"user: turn (\d+):", material)}
    assert again and not again & folded  # ...not redone
    after = _stored_summary(restarted)
    assert after is not None and after.through_seq > before.through_seq


async def test_an_overflow_before_output_gets_exactly_one_smaller_retry(
        settings: Settings, server: ScriptedOpenAIServer, model: SmallWindowModel) -> None:
    rt = _runtime(settings, server)
    try:
        await _turns(rt, range(1, 13))
        server.requests.clear()
        model.overflows = 2  # the retry overflows too: no third try
        events = await turn(rt, "turn 13: and this?", conv_id=CONV, role="viewer",
                            page="dashboard", object_id=1)
        assert len(_main(server.requests)) == 2
        assert events[-1]["status"] == "failed" and "context" in events[-1]["error"].lower()

        await _turns(rt, range(14, 25))  # the context grows again
        server.requests.clear()
        model.overflows = 1
        [events] = await _turns(rt, range(25, 26))
        mains = _main(server.requests)
        assert len(mains) == 2  # the one that overflowed and one retry
        first, retry = (model.estimate(request.body) for request in mains)
        assert retry < first and retry <= model.budget.shrunk().input_tokens
        assert events[-1]["status"] == "completed"
        assert "Answer to turn 25" in events[-2]["content"]
    finally:
        await rt.aclose()


async def test_no_retry_after_partial_output_or_when_nothing_shrinks(
        settings: Settings, server: ScriptedOpenAIServer, model: SmallWindowModel) -> None:
    rt = _runtime(settings, server)
    try:
        await _turns(rt, range(1, 13))
        server.requests.clear()
        model.partial_then_overflow = True  # a long context would shrink, but text came
        # (whether the person saw it yet depends on the token coalescer's timing)
        events = await turn(rt, "turn 13: go on", conv_id=CONV, role="viewer",
                            page="dashboard", object_id=1)
        assert events[-1]["status"] == "failed" and "context" in events[-1]["error"].lower()
        assert len(_main(server.requests)) == 1

        server.requests.clear()
        model.overflows = 1  # a first turn: nothing to fold, the estimate cannot shrink
        events = await turn(rt, "turn 1: hello", conv_id="conv-new", role="viewer",
                            page="dashboard", object_id=1)
        assert events[-1]["status"] == "failed" and len(server.requests) == 1
    finally:
        await rt.aclose()


async def test_the_offline_model_gets_the_same_prompt_and_keeps_answering(
        settings: Settings) -> None:
    """The default model in a 4K window: its turns are folded by its own summary calls,
    and the newest request is still the one it answers."""
    rt = build_runtime(settings.model_copy(update={
        "agent_context_window": WINDOW, "agent_max_output_tokens": OUTPUT,
        "runs_burst_per_user": 1000, "runs_per_minute_per_user": 60_000.0}))
    try:
        for number in range(1, 25):
            message = "list the dashboards" if number % 2 else f"show dashboard {number % 3 + 1}"
            events = await turn(rt, message, conv_id=CONV, role="viewer", page="dashboard",
                                object_id=1)
            assert events[-1]["status"] == "completed", (number, events[-1])
            calls = [(e["tool"], e["args"].get("dashboard_id")) for e in events
                     if e["type"] == "tool_call"]
            expected = ("list_dashboards", None) if number % 2 else (
                "get_dashboard", number % 3 + 1)
            assert calls == [expected], (number, calls)
        summary = _stored_summary(rt)
        assert summary is not None and "list the dashboards" in summary.text
    finally:
        await rt.aclose()
