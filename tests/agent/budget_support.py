"""A scripted model with a small window for the main-run budget tests, answering by rule.

Each request body is checked as it arrives, the way a real small-window server would:
over the raw-character limit it answers a context-overflow error (so a wrong token
estimator shows up as failed turns). Summary requests get a digest that names the turns
in their material; a user message "turn N" gets a tool call every `TOOL_EVERY` turns and
a padded text answer otherwise; tool results get a short answer.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from agent.budget import Budget, estimate_messages, estimate_tools, main_budget
from agent.summarise import CONVERSATION_SUMMARY_MARKER
from tests.fakes.openai_server import CONTEXT_OVERFLOW_BODY, ScriptedCall, ScriptedReply

__all__ = ["SUMMARY_USAGE", "TOOL_EVERY", "WINDOW", "SmallWindowModel", "raw_chars"]

WINDOW = 4096
OUTPUT = 512
TOOL_EVERY = 3
SUMMARY_USAGE = {"prompt_tokens": 1000, "completion_tokens": 70, "total_tokens": 1070}
_TURN = re.compile(r"\bturn (\d+)\b")


def raw_chars(body: dict[str, Any]) -> int:
    """The request's size as sent: messages and tools as JSON text (escapes included)."""
    return len(json.dumps(body.get("messages") or [])) + len(json.dumps(body.get("tools") or []))


def is_summary(body: dict[str, Any]) -> bool:
    return CONVERSATION_SUMMARY_MARKER in str((body.get("messages") or [{}])[0].get("content"))


@dataclass
class SmallWindowModel:
    """The rule; `overflows` makes that many next main requests fail as too long."""

    budget: Budget = field(default_factory=lambda: main_budget(
        context_window=WINDOW, max_output_tokens=OUTPUT))
    # What a 4K-token model takes, at a generous 4.5 characters of raw JSON per token for
    # the input part: a prompt whose real size is far beyond its estimate fails here.
    raw_limit: int = int((WINDOW - OUTPUT) * 4.5)
    overflows: int = 0
    partial_then_overflow: bool = False
    summaries: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def estimate(self, body: dict[str, Any]) -> int:
        return estimate_messages(body["messages"]) + estimate_tools(body.get("tools") or [])

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        messages = body["messages"]
        if raw_chars(body) > self.raw_limit:
            return ScriptedReply(status=400, error_body=CONTEXT_OVERFLOW_BODY)
        if is_summary(body):
            with self.lock:
                self.summaries += 1
                number = self.summaries
            turns = sorted({int(n) for n in _TURN.findall(str(messages[-1]["content"]))})
            covered = f"turns {turns[0]}-{turns[-1]}" if turns else "no turns"
            return ScriptedReply(text=f"SUMMARY-{number} covers {covered}. " + "s" * 300,
                                 usage=SUMMARY_USAGE)
        with self.lock:
            overflow = self.overflows > 0
            self.overflows -= int(overflow)
            partial, self.partial_then_overflow = self.partial_then_overflow, False
        if overflow:
            return ScriptedReply(status=400, error_body=CONTEXT_OVERFLOW_BODY)
        if partial:
            return ScriptedReply(text="Half an answer that never", text_deltas=4,
                                 error_after=3)
        last = messages[-1]
        if last["role"] == "tool":
            return ScriptedReply(text=f"Dashboard read ({last['tool_call_id']}).")
        found = _TURN.search(str(last.get("content")))
        number = int(found.group(1)) if found else 0
        if number % TOOL_EVERY == 0:
            # a call with words of its own: a fold could end between it and its result
            return ScriptedReply(text=f"Reading it for turn {number}. " + "c" * 600,
                                 tool_calls=[ScriptedCall(
                                     "get_dashboard", json.dumps({"dashboard_id": 1 + number % 3}),
                                     id=f"call_turn_{number}")])
        return ScriptedReply(text=f"Answer to turn {number}: " + "a" * 400)
