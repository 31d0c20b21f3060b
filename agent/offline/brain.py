"""Rule-based decisions of the offline model: which offered tool to call, or what to say.

Pure functions over OpenAI-format messages and tool schemas, so they are tested directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent.prompts import read_context_block

__all__ = ["Decision", "decide"]


@dataclass
class Decision:
    text: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, JSON arguments)


def _offered(tools: list[dict[str, Any]]) -> set[str]:
    return {t.get("function", {}).get("name", "") for t in tools}


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _answer_from_results(messages: list[dict[str, Any]]) -> str:
    results = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.append(message)
    parts = []
    for message in reversed(results):
        name = message.get("name") or "the tool"
        parts.append(f"{name} returned: {str(message.get('content'))[:600]}")
    return "\n\n".join(parts)


def decide(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Decision:
    offered = _offered(tools)
    if messages and messages[-1].get("role") == "tool":
        return Decision(text=_answer_from_results(messages))
    context = read_context_block(str(messages[0].get("content", ""))) if messages else {}
    del context
    text = _last_user_text(messages).strip().lower()
    if not text:
        return Decision(text="Please ask me something about your Superset deployment.")
    if "environment" in text and "list_environments" in offered:
        return Decision(tool_calls=[("list_environments", "{}")])
    if "show_capabilities" in offered:
        return Decision(tool_calls=[("show_capabilities", "{}")])
    return Decision(text="I can't help with that here.")
