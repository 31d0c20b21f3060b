"""Turns stored messages into model messages, keeping every tool call paired with a result."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

__all__ = ["StoredMessage", "paired_only", "to_model_messages"]


class StoredMessage(Protocol):
    role: str
    content: str
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    tool_name: str | None


def to_model_messages(rows: Iterable[StoredMessage]) -> list[dict[str, Any]]:
    """OpenAI-format messages; assistant tool calls without a stored result are dropped."""
    messages: list[dict[str, Any]] = []
    for row in rows:
        if row.role == "user":
            messages.append({"role": "user", "content": row.content})
        elif row.role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": row.content or None}
            if row.tool_calls:
                message["tool_calls"] = [dict(call) for call in row.tool_calls]
            messages.append(message)
        elif row.role == "tool":
            messages.append({"role": "tool", "tool_call_id": row.tool_call_id,
                             "name": row.tool_name, "content": row.content})
    return paired_only(messages)


def paired_only(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop tool calls that have no result and results that have no call.

    Providers reject a transcript with an unanswered tool call, and a snapshot must never
    show one (SPEC §9), so every path that builds a prompt or a snapshot goes through here.
    """
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    called: set[str] = set()
    result: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "assistant" and message.get("tool_calls"):
            calls = [c for c in message["tool_calls"] if c.get("id") in answered]
            called.update(c["id"] for c in calls)
            message = {**message}
            if calls:
                message["tool_calls"] = calls
            else:
                message.pop("tool_calls")
                if not message.get("content"):
                    continue
        elif message.get("role") == "tool" and message.get("tool_call_id") not in called:
            continue
        result.append(message)
    return result
