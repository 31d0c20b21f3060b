"""Events on the wire (SPEC §2): the common fields, increasing `seq`, a round trip through
`parse_event`, and coalesced tokens on a long streamed reply."""

from __future__ import annotations

import json
import time
from itertools import pairwise
from typing import Any

import pytest

from agent import events as ev
from runtime import Runtime
from tests.fakes.openai_server import ScriptedCall, ScriptedOpenAIServer
from tests.fakes.runs import collect, of_type


async def _turn(rt: Runtime, message: str, conv_id: str = "c1") -> list[dict[str, Any]]:
    identity, token = rt.issuer.mint_demo("viewer")
    live = await rt.agent.start_turn(message=message, conv_id=conv_id, user_id=identity.user_id,
                                     user_jwt=token, env_id="ss-dev", uicontext_str="not json")
    return await collect(live)


def _check_envelope(events: list[dict[str, Any]]) -> None:
    run_ids = {event["run_id"] for event in events}
    assert len(run_ids) == 1 and all(run_ids)
    seqs = [event["seq"] for event in events]
    assert all(b > a for a, b in pairwise(seqs)), seqs
    stamps = [event["ts"] for event in events]
    assert all(b >= a for a, b in pairwise(stamps))
    assert abs(stamps[0] - time.time()) < 600
    for event in events:
        assert {"type", "run_id", "seq", "ts"} <= set(event)
        json.dumps(event)  # plain JSON, nothing exotic
        assert ev.parse_event(event).model_dump(mode="json") == event


async def test_every_event_of_a_run_has_the_common_fields(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_tool_calls(ScriptedCall("show_capabilities"),
                            ScriptedCall("no_such_tool"), ScriptedCall("list_environments",
                                                                       '{"x": 1}'))
    server.reply_text("All done here.", deltas=5)

    events = await _turn(rt, "hello")

    _check_envelope(events)
    kinds = {event["type"] for event in events}
    assert {"run_started", "warning", "tool_call", "tool_result", "permission_denied",
            "tool_error", "token", "message", "done"} <= kinds
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "done"


async def test_failed_and_cancelled_runs_end_with_a_stamped_done(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_context_overflow()
    failed = await _turn(rt, "hello")
    _check_envelope(failed)
    assert failed[-1]["status"] == "failed"

    held = server.reply_text("cut short", deltas=5, hold_after=3)
    identity, token = rt.issuer.mint_demo("viewer")
    live = await rt.agent.start_turn(message="again", conv_id="c1", user_id=identity.user_id,
                                     user_jwt=token, env_id=None, uicontext_str=None)
    assert await held.until_reached()
    live.cancel()
    cancelled = await collect(live)
    held.release.set()
    _check_envelope(cancelled)
    assert cancelled[-1]["status"] == "cancelled"
    assert cancelled[0]["run_id"] != failed[0]["run_id"]


async def test_a_long_reply_is_coalesced_into_few_token_events(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    words = [f"word{i} " for i in range(500)]
    text = "".join(words)
    server.reply_text(text, deltas=500, delay_s=0.002)

    started = time.monotonic()
    events = await _turn(rt, "say a lot")
    elapsed = time.monotonic() - started

    tokens = of_type(events, "token")
    assert "".join(t["text"] for t in tokens) == text
    assert of_type(events, "message")[0]["content"] == text
    assert len(tokens) < 100  # far fewer than the 500 deltas
    assert len(tokens) <= elapsed * 20 + 2  # about 20 a second at most
    assert len(events) < 300


async def test_the_follow_stream_grows_and_ends_with_done(
    rt: Runtime, server: ScriptedOpenAIServer
) -> None:
    server.reply_text("one two three", deltas=3, delay_s=0.05)
    identity, token = rt.issuer.mint_demo("viewer")
    live = await rt.agent.start_turn(message="count", conv_id="c1", user_id=identity.user_id,
                                     user_jwt=token, env_id=None, uicontext_str=None)

    snapshots = [snapshot async for snapshot in live.follow()]

    assert snapshots[-1] == live.events
    assert snapshots[-1][-1]["type"] == "done"
    lengths = [len(s) for s in snapshots]
    assert lengths == sorted(set(lengths))
    for earlier, later in pairwise(snapshots):
        assert later[: len(earlier)] == earlier
    # a reader that joins after the end gets the whole list at once
    assert [s async for s in live.follow()] == [live.events]


def test_stamper_numbers_events_from_its_start() -> None:
    stamp = ev.EventStamper("run-1", start_seq=4)

    first = stamp(ev.Warning, message="a")
    second = stamp(ev.Done, status="completed")

    assert (first.seq, second.seq) == (5, 6)
    assert first.run_id == second.run_id == "run-1"
    assert second.usage == ev.Usage()


def test_usage_adds_up() -> None:
    total = ev.Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3).add(
        ev.Usage(prompt_tokens=10, completion_tokens=20, total_tokens=30))

    assert total == ev.Usage(prompt_tokens=11, completion_tokens=22, total_tokens=33)


@pytest.mark.parametrize("payload", [
    {"type": "run_started", "conv_id": "c", "context": None, "env_id": None, "env_tier": None,
     "tools": [], "model": "m"},
    {"type": "token", "text": "hi"},
    {"type": "tool_call", "call_id": "1", "tool": "t", "args": {}, "env_id": None,
     "tool_risk": "read"},
    {"type": "tool_retry", "call_id": "1", "tool": "t", "attempt": 1, "max_attempts": 3,
     "delay_s": 0.5, "error": "503"},
    {"type": "tool_result", "call_id": "1", "tool": "t", "summary": "s", "truncated": False,
     "duration_ms": 3},
    {"type": "tool_error", "call_id": "1", "tool": "t", "error": "e", "retryable": True,
     "retry_exhausted": False},
    {"type": "tool_timeout", "call_id": "1", "tool": "t", "timeout_s": 2.0,
     "is_write_tool": False, "retryable": True, "message": "m"},
    {"type": "permission_denied", "call_id": "1", "tool": "t", "reason": "r",
     "required_role": "admin"},
    {"type": "confirm_required", "confirmation_id": "k", "call_id": "1", "tool": "t",
     "args": {}, "env_id": "prod", "tool_risk": "write", "env_risk": "prod",
     "permission_risk": "editor", "dangerous": False, "countdown_s": 0, "summary": "s",
     "expires_at": 1.0},
    {"type": "warning", "message": "w"},
    {"type": "message", "role": "assistant", "content": "c"},
    {"type": "done", "status": "awaiting_confirmation", "error": None},
])
def test_every_event_type_round_trips(payload: dict[str, Any]) -> None:
    wire = {"run_id": "r", "seq": 1, "ts": 2.0, **payload}

    event = ev.parse_event(wire)

    assert event.type == payload["type"]
    again = event.model_dump(mode="json")
    assert {k: again[k] for k in wire} == wire
    assert ev.parse_event(again) == event


def test_unknown_event_types_are_rejected() -> None:
    with pytest.raises(ValueError):
        ev.parse_event({"type": "telepathy", "run_id": "r", "seq": 1, "ts": 0.0})
