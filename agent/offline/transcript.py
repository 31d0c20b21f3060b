"""Reading OpenAI-format messages: the context block, the last request, and tool exchanges.

Everything the offline brain knows comes from the messages it is given, so these helpers are
shared by request parsing, answer writing and side questions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent.data_blocks import unwrap_data
from agent.prompts import read_context_block

__all__ = [
    "SIDE_MARKER",
    "ToolExchange",
    "context_of",
    "exchanges",
    "is_side_mode",
    "last_user_text",
    "pending_exchange",
    "text_of",
    "tool_schemas",
    "user_turns",
]

SIDE_MARKER = "<side_question/>"


def text_of(message: dict[str, Any]) -> str:
    """Message content as text (content may be a string, None or a list of parts)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return "".join(str(p) for p in parts)
    return json.dumps(content, default=str)


def _system_text(messages: list[dict[str, Any]]) -> str:
    for message in messages:
        if message.get("role") == "system":
            return text_of(message)
        break
    return ""


def is_side_mode(messages: list[dict[str, Any]]) -> bool:
    return SIDE_MARKER in _system_text(messages)


def context_of(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The `<context>` block of the first system message, or {} when there is none."""
    return read_context_block(_system_text(messages))


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return text_of(message)
    return ""


def tool_schemas(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Offered tool name -> its JSON-schema `parameters` (empty object schema if missing)."""
    offered: dict[str, dict[str, Any]] = {}
    for tool in tools or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            offered[function["name"]] = parameters if isinstance(parameters, dict) else {}
    return offered


@dataclass
class ToolExchange:
    """One tool call of an assistant message and the result text it got (if any yet)."""

    name: str
    arguments: dict[str, Any]
    call_id: str = ""
    result: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _calls_of(message: dict[str, Any]) -> list[ToolExchange]:
    calls = []
    for call in message.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") or {}
        calls.append(ToolExchange(name=str(function.get("name") or ""),
                                  arguments=_parse_arguments(function.get("arguments")),
                                  call_id=str(call.get("id") or "")))
    return calls


def exchanges(messages: list[dict[str, Any]]) -> list[ToolExchange]:
    """Every tool call in the transcript, oldest first, each with its result text."""
    found: list[ToolExchange] = []
    by_id: dict[str, ToolExchange] = {}
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            for call in _calls_of(message):
                found.append(call)
                if call.call_id:
                    by_id[call.call_id] = call
        elif role == "tool":
            call = by_id.get(str(message.get("tool_call_id") or ""))
            if call is None:  # a result without a visible call: keep it under its own name
                call = ToolExchange(name=str(message.get("name") or "tool"), arguments={})
                found.append(call)
            call.result = unwrap_data(text_of(message))
    return found


def pending_exchange(messages: list[dict[str, Any]]) -> list[ToolExchange]:
    """The tool calls of the latest assistant message when the transcript ends in results."""
    if not messages or messages[-1].get("role") != "tool":
        return []
    start = len(messages) - 1
    while start > 0 and messages[start - 1].get("role") == "tool":
        start -= 1
    owner = messages[start - 1] if start > 0 else {}
    tail = messages[start - 1:] if owner.get("role") == "assistant" else messages[start:]
    return [call for call in exchanges(tail) if call.result is not None]


def user_turns(messages: list[dict[str, Any]]) -> list[tuple[str, list[ToolExchange]]]:
    """Each user message with the tool calls made after it (until the next user message)."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        if message.get("role") == "user":
            turns.append((text_of(message), []))
        elif turns:
            turns[-1][1].append(message)
    return [(text, exchanges(tail)) for text, tail in turns]
