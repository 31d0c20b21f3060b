"""Turns stored messages into model messages, keeping every tool call paired with a result."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from agent.data_blocks import wrap_tool_result

__all__ = ["StoredMessage", "model_message", "paired_only", "to_model_messages"]


class StoredMessage(Protocol):
    role: str
    content: str
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    tool_name: str | None


def to_model_messages(rows: Iterable[StoredMessage]) -> list[dict[str, Any]]:
    """OpenAI-format messages; assistant tool calls without a stored result are dropped.
    Tool results go inside data blocks (agent/data_blocks.py)."""
    messages = [message for message in map(model_message, rows) if message is not None]
    return paired_only(messages)


def model_message(row: StoredMessage) -> dict[str, Any] | None:
    """One stored row as a model message (None: nothing to send), before pairing."""
    if row.role == "user":
        return {"role": "user", "content": row.content}
    if row.role == "assistant":
        if not row.content and not row.tool_calls:
            return None  # an empty reply: providers reject an assistant message with neither
        message: dict[str, Any] = {"role": "assistant", "content": row.content or None}
        if row.tool_calls:
            message["tool_calls"] = [dict(call) for call in row.tool_calls]
        return message
    if row.role == "tool":
        return {"role": "tool", "tool_call_id": row.tool_call_id,
                "name": row.tool_name,  # Superset's text: a data block
                "content": wrap_tool_result(row.tool_name, row.content)}
    return None


def paired_only(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep a tool call only if its result is in the run of tool messages right after it.

    Providers reject a transcript with an unanswered tool call or a result that does not
    directly follow its call, and a snapshot must never show one (SPEC §9), so every path
    that builds a prompt or a snapshot goes through here. Matching by position, not just
    by id, also keeps a reused id from pairing a call with an older call's result.
    """
    result: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.get("role") == "tool":
            continue  # a result with no call right before it
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            result.append(message)
            continue
        block_end = index
        while block_end < len(messages) and messages[block_end].get("role") == "tool":
            block_end += 1
        block, index = messages[index:block_end], block_end
        call_ids = {call.get("id") for call in message["tool_calls"]}
        answers: dict[Any, dict[str, Any]] = {}
        for tool_message in block:
            if tool_message.get("tool_call_id") in call_ids:
                answers.setdefault(tool_message.get("tool_call_id"), tool_message)
        calls, seen = [], set()
        for call in message["tool_calls"]:
            if call.get("id") in answers and call.get("id") not in seen:
                seen.add(call.get("id"))
                calls.append(call)
        kept = {key: value for key, value in message.items() if key != "tool_calls"}
        if calls:
            kept["tool_calls"] = calls
        if calls or kept.get("content"):
            result.append(kept)
        result.extend(m for m in block if answers.get(m.get("tool_call_id")) is m)
    return result
